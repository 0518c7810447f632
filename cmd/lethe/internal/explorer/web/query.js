// The query tab's reading of a query: over one partition key, or over
// every partition key range of the container, one range after another, as
// an SDK reads a query the gateway serves across partitions. A range
// split while the query is read (410, substatus 1002) is replaced by its
// children, which resume from the range's continuation, as the SDKs do.

// rangeGone is the substatus of a 410 for a partition key range that a
// split replaced.
const rangeGone = 1002;

// Query reads the pages of a query. request is a Client's request (bound),
// segs the container's path segments, body the query ({query,
// parameters}) and headers the request's own (x-ms-max-item-count, …);
// pk, if given, is the x-ms-documentdb-partitionkey of the one partition
// to read, otherwise every range is read.
export class Query {
  constructor(request, segs, body, headers, pk) {
    this.request = request;
    this.segs = segs;
    this.body = body;
    this.headers = headers;
    this.pk = pk;
    // work is what is left to read, in the order of the space: a range
    // id, the part of the effective partition key space to read ("" to
    // "FF" is all of it), the range's own bounds and the continuation to
    // resume from. null until the ranges are read.
    this.work = pk ? [{ token: null }] : null;
    this.rangeCount = pk ? 0 : null; // how many ranges the container has, once read
    this.done = false;
  }

  // ranges reads the container's partition key ranges, in the order of
  // the space.
  async ranges() {
    const res = await this.request("GET", [...this.segs, "pkranges"]);
    const list = (res.body && res.body.PartitionKeyRanges) || [];
    list.sort((a, b) => (a.minInclusive < b.minInclusive ? -1 : a.minInclusive > b.minInclusive ? 1 : 0));
    return list;
  }

  // next reads the next page that has results, or the last: {docs, ranges
  // (the id each result came from), charge (of every request it took),
  // metrics (the last response's x-ms-documentdb-query-metrics)}.
  async next() {
    const page = { docs: [], ranges: [], charge: 0, metrics: null };
    if (this.work === null) {
      this.work = (await this.ranges()).map((r) => ({ id: r.id, lo: r.minInclusive, hi: r.maxExclusive, min: r.minInclusive, max: r.maxExclusive, token: null }));
      this.rangeCount = this.work.length;
    }
    while (this.work.length > 0 && page.docs.length === 0) {
      const w = this.work[0];
      let res;
      try {
        res = await this.request("POST", [...this.segs, "docs"], { body: this.body, headers: this.headersOf(w) });
      } catch (e) {
        if (e.status !== 410 || e.substatus !== rangeGone || this.pk) throw e;
        await this.replaceGone(w);
        continue;
      }
      page.charge += res.charge;
      page.metrics = res.headers.get("x-ms-documentdb-query-metrics");
      for (const d of (res.body && res.body.Documents) || []) {
        page.docs.push(d);
        page.ranges.push(w.id ?? "");
      }
      w.token = res.headers.get("x-ms-continuation");
      if (!w.token) this.work.shift();
    }
    this.done = this.work.length === 0;
    return page;
  }

  // headersOf are the headers of a request for the work w: its partition
  // key, or its range (and the part of it, when it is narrower), and its
  // continuation.
  headersOf(w) {
    const h = { ...this.headers, "content-type": "application/query+json", "x-ms-documentdb-isquery": "True" };
    if (this.pk) {
      h["x-ms-documentdb-partitionkey"] = this.pk;
    } else {
      h["x-ms-documentdb-query-enablecrosspartition"] = "True";
      h["x-ms-documentdb-partitionkeyrangeid"] = w.id;
      if (w.lo !== w.min || w.hi !== w.max) {
        h["x-ms-start-epk"] = w.lo;
        h["x-ms-end-epk"] = w.hi;
      }
    }
    if (w.token) h["x-ms-continuation"] = w.token;
    return h;
  }

  // replaceGone replaces the work w of a range that is gone by the
  // ranges that now hold its part of the space, each from w's
  // continuation.
  async replaceGone(w) {
    const now = (await this.ranges()).filter((r) => r.maxExclusive > w.lo && r.minInclusive < w.hi);
    if (now.length === 0 || now.some((r) => r.id === w.id)) {
      throw new Error(`the partition key range ${w.id} is gone, and no range replaced it`);
    }
    this.work.splice(0, 1, ...now.map((r) => ({
      id: r.id,
      lo: r.minInclusive > w.lo ? r.minInclusive : w.lo,
      hi: r.maxExclusive < w.hi ? r.maxExclusive : w.hi,
      min: r.minInclusive,
      max: r.maxExclusive,
      token: w.token,
    })));
    this.rangeCount += now.length - 1;
  }
}
