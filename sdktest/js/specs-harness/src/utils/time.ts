// Harness: the SDK's internal clock helper, as the SDK defines it (milliseconds since the epoch).
export function getCurrentTimestampInMs(): number {
  return Date.now();
}
