// Package query implements the Azure Cosmos DB for NoSQL query language for
// lethe: a hand-written lexer and recursive-descent parser (Parse) and a
// tree-walking evaluator (Exec) over JSON documents.
//
// Supported: SELECT [DISTINCT] [TOP n] with *, VALUE expr or a projection
// list; FROM <name> [AS] alias, FROM <path> [AS alias], FROM x IN <path>;
// any number of JOIN x IN <expr>; WHERE; ORDER BY (several keys, ASC/DESC,
// cross-type order undefined < null < false < true < numbers < strings <
// arrays < objects); OFFSET n LIMIT m; @parameters anywhere a value can
// stand (including TOP, OFFSET and LIMIT); the aggregates COUNT, SUM, AVG,
// MIN and MAX; the operators of the language (arithmetic, bitwise with
// JavaScript 32-bit semantics, || concatenation, comparisons, IN, BETWEEN,
// LIKE with ESCAPE, three-valued AND/OR/NOT, ?: and ??); and the built-in
// functions of the Cosmos DB for NoSQL reference: type checks (IS_INTEGER
// among them), IIF and CHOOSE, string functions (RegexMatch with the m, s,
// i and x modifiers, StringTo* conversions, StringJoin, StringSplit),
// math (NumberBin, RAND, the Int* functions on integers a double holds
// exactly), arrays (ARRAY_CONTAINS_ANY/ALL, SetIntersect, SetUnion,
// ObjectToArray), and date and time (DateTimeAdd, DateTimeBin,
// DateTimeDiff, DateTimeFromParts, DateTimePart, DateTimeToTicks,
// DateTimeToTimestamp, TicksToDateTime, TimestampToDateTime and the
// GetCurrent* ones, which read the query's single clock reading).
//
// Not supported (reported as a clear *Error): GROUP BY, subqueries (EXISTS,
// ARRAY(...), (SELECT ...)), user-defined functions, and the spatial
// (ST_*), full-text and vector functions. RegexMatch runs Go's RE2
// syntax: a pattern with backreferences or lookaround is an error.
//
// String functions measure and index strings in UTF-16 code units, as
// JavaScript and Cosmos DB do: LENGTH("😀") is 2. REVERSE reverses code
// points. Numbers are IEEE doubles; a result that is NaN or ±Inf is treated
// as undefined.
//
// Exec honours its context within a document as well as between
// documents (it looks at it every few thousand evaluation steps), and
// bounds its work and memory: see MaxValueSize, MaxJoinRowsPerItem,
// MaxRows and MaxBuiltBytes; LIKE matches the parts of a pattern between
// its % wildcards one after the other, leftmost first, never backtracking
// into an earlier part. Results come in the order of their keys (Key), and
// ExecFrom resumes after a key, for continuation tokens.
//
// Evaluation is lazy for the common case: a property path rooted at the
// FROM alias is resolved by scanning the raw document bytes and decoding
// only the value found, so filters on a few properties do not decode whole
// documents, and SELECT * / SELECT VALUE c return the stored bytes verbatim.
package query
