// Package query implements the Azure Cosmos DB for NoSQL query language for
// lethe: a hand-written lexer and recursive-descent parser (Parse) and a
// tree-walking evaluator (Exec) over JSON documents.
//
// Supported: SELECT [DISTINCT] [TOP n] with *, VALUE expr or a projection
// list; FROM <name> [AS] alias, FROM <path> [AS alias], FROM x IN <path>;
// any number of JOIN x IN <expr>, JOIN <path> [[AS] alias] (the path's
// value as one row, none when undefined: JOIN f.children joins the array
// once, its alias children) and JOIN (SELECT ...) [[AS] alias]; WHERE;
// GROUP BY; ORDER BY (several keys, ASC/DESC, cross-type order undefined <
// null < false < true < numbers < strings < arrays < objects); OFFSET n
// LIMIT m; @parameters anywhere a value can stand (including TOP, OFFSET
// and LIMIT); the aggregates COUNT, SUM, AVG, MIN and MAX; subqueries; the
// operators of the language (arithmetic, bitwise with JavaScript 32-bit
// semantics, || concatenation, comparisons, IN, BETWEEN, LIKE with ESCAPE,
// three-valued AND/OR/NOT, ?: and ??); and the built-in functions of the
// Cosmos DB for NoSQL reference: type checks (IS_INTEGER, IS_DATETIME among
// them), IIF and CHOOSE, string functions (RegexMatch with the m, s, i and
// x modifiers, on Go's RE2: a pattern it cannot compile matches nothing;
// StringTo* conversions, StringJoin, StringSplit, LASTINDEXOF,
// CONTAINS_ANY/ALL_CI/CS), math (NumberBin, RAND, the Int* functions on
// 64-bit integers), arrays and sets (ARRAY_CONTAINS_ANY/ALL,
// ARRAY_MIN/MAX/SUM/AVG/MEDIAN, SetIntersect, SetUnion, SetDifference,
// SetEqual, ObjectToArray), and date and time (DateTimeAdd, DateTimeBin,
// DateTimeDiff, DateTimeFormat, DateTimeFromParts, DateTimePart,
// DateTimeToTicks, DateTimeToTimestamp, TicksToDateTime,
// TimestampToDateTime, NOW, AGO, YEAR, MONTH, DAY and the GetCurrent*
// ones, which read the query's single clock reading).
//
// GROUP BY <expr>, ... groups the rows that pass WHERE by the values of
// its expressions, which may be any expressions that refer to the input
// (paths, LOWER(c.name), ...) but hold no aggregate and no subquery; rows
// whose value is undefined form one group, as in Cosmos DB. The select
// list (or VALUE) may hold only the GROUP BY expressions, expressions made
// of them (UPPER(LOWER(c.name)) with GROUP BY LOWER(c.name), c.a.b with
// GROUP BY c.a), aggregates (whose arguments are evaluated per row) and
// constants; anything else is an error naming it, as are SELECT * and
// ORDER BY with GROUP BY (Cosmos DB refuses them too). There is one result
// per group, in the order of the groups' values; TOP, OFFSET LIMIT and
// DISTINCT apply to the groups. A query with no rows has no groups.
//
// Subqueries are correlated: they see the aliases of the queries around
// them, and are evaluated for each row of those. A scalar subquery
// (SELECT ...) stands for its only result, or undefined when it has none;
// more than one result is an error. EXISTS(SELECT ...) is whether there is
// a result (a VALUE that is undefined is none), ARRAY(SELECT ...) the
// array of the results. JOIN (SELECT ...) [AS] alias iterates the results
// of the subquery; JOIN x IN (SELECT VALUE [...]) iterates the array a
// scalar subquery gives. A subquery's FROM is x IN <expr> or <expr> [AS]
// alias over values of the queries around it (not the container); it may
// have JOINs, WHERE, ORDER BY, DISTINCT, TOP, OFFSET LIMIT and aggregates.
//
// Not supported (reported as a clear *Error): GROUP BY with ORDER BY or
// SELECT *; aggregates, subqueries or aliases in GROUP BY; GROUP BY in a
// subquery; a subquery in the select list of a GROUP BY or aggregate
// query except inside an aggregate's argument; FROM (SELECT ...) at the
// top level; the operator form c.x IN (SELECT ...) (use EXISTS).
//
// The spatial functions ST_DISTANCE, ST_WITHIN, ST_INTERSECTS, ST_AREA,
// ST_ISVALID and ST_ISVALIDDETAILED take GeoJSON Points, LineStrings,
// Polygons and MultiPolygons, on the WGS-84 earth or, when Env.Geometry
// says so, in the plane (spatial.go, on internal/geo); an invalid shape
// makes them undefined.
//
// User-defined functions, udf.<name>(args) (the prefix in lower case, the
// name case-sensitive), stand anywhere an expression may; the caller gives
// them as Go functions (Env.UDFs, Func), and an evaluation fails before
// evaluating anything when one is missing (CheckUDFs). A call with an
// undefined argument is skipped (undefined), as Cosmos DB documents; a
// function's error, panic or result JSON cannot represent fails the
// evaluation with a *UDFError. See udf.go.
//
// VectorDistance compares two vectors (vector.go, on internal/vector) by
// the distance function and element type of its options, else those
// Env.Vector gives for the path, else cosine and float32; ORDER BY
// VectorDistance(...) orders the most similar first. ORDER BY RANK takes
// FullTextScore (BM25, with the statistics Env.TextStats gives) or RRF of
// FullTextScore and VectorDistance calls (rank.go); both are refused
// anywhere else.
//
// FullTextContains, FullTextContainsAll and FullTextContainsAny analyze
// their text and search strings with internal/fulltext, in the language
// Env.TextLanguage gives for the path of their first argument (en-US by
// default); see fulltext.go.
//
// String functions measure and index strings in UTF-16 code units, as
// JavaScript and Cosmos DB do: LENGTH("😀") is 2. REVERSE reverses code
// points. Numbers are IEEE doubles. NaN and the infinities (the literals
// NaN and Infinity, case-sensitive, or 1 / 0, SQRT(-1)) are numbers while
// a query is evaluated: IEEE arithmetic, NaN equal to nothing,
// IS_FINITE_NUMBER false, ToString "NaN", "Infinity", "-Infinity"; a
// result, ORDER BY value or GROUP BY value that holds one fails the query,
// since JSON cannot write it (Cosmos DB answers 400).
//
// Exec honours its context within a document as well as between
// documents (it looks at it every few thousand evaluation steps), and
// bounds its work and memory: see MaxValueSize, MaxJoinRowsPerItem,
// MaxRows and MaxBuiltBytes (the rows of subqueries count against
// MaxJoinRowsPerItem with those of the item they are evaluated for, and
// the results one subquery holds at once against MaxValueSize; groups
// count as rows, their values as computed results); LIKE matches the
// parts of a pattern between its % wildcards one after the other, leftmost
// first, never backtracking into an earlier part. Results come in the order of their keys (Key), and
// ExecFrom resumes after a key, for continuation tokens; a GROUP BY
// result's key is its group's values.
//
// Evaluation is lazy for the common case: a property path rooted at the
// FROM alias is resolved by scanning the raw document bytes and decoding
// only the value found, so filters on a few properties do not decode whole
// documents, and SELECT * / SELECT VALUE c return the stored bytes verbatim.
package query
