package query

import (
	"strings"
	"testing"
)

// TestMoreFunctions pins each function of funcs_more.go with the examples
// of the Cosmos DB for NoSQL function reference where it gives one, and
// with arguments of the wrong type, which make undefined (no result).
func TestMoreFunctions(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		// type checking and conditionals
		{`IS_INTEGER(1234)`, `true`},
		{`IS_INTEGER(1234.5)`, `false`},
		{`IS_INTEGER("1234")`, `false`},
		{`IS_INTEGER(undefined)`, `false`},
		{`IIF(true, "a", "b")`, `"a"`},
		{`IIF(false, "a", "b")`, `"b"`},
		{`IIF("true", "a", "b")`, `"b"`}, // not a boolean: the false branch
		{`IIF(1 = 1, {"x": 1}, 0)`, `{"x":1}`},
		{`CHOOSE(2, "a", "b", "c")`, `"b"`},
		{`CHOOSE(4, "a", "b", "c")`, ``},
		{`CHOOSE(0, "a")`, ``},
		{`CHOOSE("1", "a")`, ``},

		// string conversion
		{`StringToArray("[1,2,3]")`, `[1,2,3]`},
		{`StringToArray(" [\"a\", {\"b\":null}] ")`, `["a",{"b":null}]`},
		{`StringToArray("[1,2,3")`, ``},
		{`StringToArray("1")`, ``},
		{`StringToBoolean("true")`, `true`},
		{`StringToBoolean("  false ")`, `false`},
		{`StringToBoolean("False")`, ``},
		{`StringToNull("null")`, `null`},
		{`StringToNull("NULL")`, ``},
		{`StringToNumber("1.000000")`, `1`},
		{`StringToNumber("   -1.5e2")`, `-150`},
		{`StringToNumber("A")`, ``},
		{`StringToNumber(1)`, ``},
		{`StringToObject("{\"a\": [1, 2]}")`, `{"a":[1,2]}`},
		{`StringToObject("{'a': 1}")`, ``},
		{`StringJoin(["a", "b", "c"], ", ")`, `"a, b, c"`},
		{`StringJoin([], "-")`, `""`},
		{`StringJoin(["a", 1], "-")`, ``},
		{`StringSplit("a,b,,c", ",")`, `["a","b","","c"]`},
		{`StringSplit("abc", "")`, `["abc"]`},
		{`StringSplit(1, ",")`, ``},

		// regular expressions
		{`RegexMatch("abcd", "ABC", "")`, `false`},
		{`RegexMatch("abcd", "ABC", "i")`, `true`},
		{`RegexMatch("abcd", "ab.")`, `true`},
		{`RegexMatch("abcd", "^b")`, `false`},
		{`RegexMatch("abcd", "a b c", "x")`, `true`},
		{`RegexMatch("ab\ncd", "^cd", "m")`, `true`},
		{`RegexMatch("ab\ncd", "b.c", "s")`, `true`},
		{`RegexMatch(1, "1")`, ``},

		// math
		{`NumberBin(2.5)`, `2`},
		{`NumberBin(-2.5)`, `-3`},
		{`NumberBin(89, 10)`, `80`},
		{`NumberBin(89, 0)`, ``},
		{`IntAdd(1, 2)`, `3`},
		{`IntAdd(1.5, 2)`, ``},
		{`IntSub(1, 2)`, `-1`},
		{`IntMul(-3, 4)`, `-12`},
		{`IntDiv(7, 2)`, `3`},
		{`IntDiv(-7, 2)`, `-3`},
		{`IntDiv(7, 0)`, ``},
		{`IntMod(-7, 2)`, `-1`},
		{`IntMod(7, 0)`, ``},
		{`IntBitAnd(12, 10)`, `8`},
		{`IntBitOr(12, 10)`, `14`},
		{`IntBitXor(12, 10)`, `6`},
		{`IntBitNot(0)`, `-1`},
		{`IntBitLeftShift(1, 3)`, `8`},
		{`IntBitRightShift(-16, 2)`, `-4`},
		{`IntBitLeftShift(1, 64)`, ``},
		{`IntBitLeftShift(1, 60)`, ``}, // beyond what a double holds exactly

		// arrays and objects
		{`ARRAY_CONTAINS_ANY([1, true, "3", [1, 2, 3]], 2, true)`, `true`},
		{`ARRAY_CONTAINS_ANY([1, true, "3", [1, 2, 3]], [1, 2, 3])`, `true`},
		{`ARRAY_CONTAINS_ANY([1, true, "3", [1, 2, 3]], 4, "true")`, `false`},
		{`ARRAY_CONTAINS_ALL([1, true, "3", [1, 2, 3]], 1, true, "3")`, `true`},
		{`ARRAY_CONTAINS_ALL([1, true, "3", [1, 2, 3]], 1, 2)`, `false`},
		{`ARRAY_CONTAINS_ALL("no array", 1)`, ``},
		{`SetIntersect([1, 2, 3, 4], [3, 4, 5, 6])`, `[3,4]`},
		{`SetIntersect([1, 1, {"a": 1}], [{"a": 1}, 1])`, `[1,{"a":1}]`},
		{`SetIntersect([1], "x")`, ``},
		{`SetUnion([1, 2, 3, 4], [3, 4, 5, 6])`, `[1,2,3,4,5,6]`},
		{`SetUnion([], [])`, `[]`},
		{`ObjectToArray({"a": 1, "b": [2]})`, `[{"k":"a","v":1},{"k":"b","v":[2]}]`},
		{`ObjectToArray({"a": 1}, "name", "value")`, `[{"name":"a","value":1}]`},
		{`ObjectToArray([1])`, ``},

		// date and time
		{`DateTimeAdd("mm", 1, "2020-07-09T23:20:13.4575530Z")`, `"2020-08-09T23:20:13.4575530Z"`},
		{`DateTimeAdd("hh", -2, "2020-07-09T23:20:13.4575530Z")`, `"2020-07-09T21:20:13.4575530Z"`},
		{`DateTimeAdd("yyyy", 1, "2020-02-29T00:00:00.0000000Z")`, `"2021-03-01T00:00:00.0000000Z"`},
		{`DateTimeAdd("week", 1, "2020-07-09T23:20:13.4575530Z")`, ``},
		{`DateTimeAdd("dd", 1, "not a date")`, ``},
		{`DateTimeDiff("yyyy", "2019-02-04T16:00:00.0000000", "2018-03-05T05:00:00.0000000")`, `-1`},
		{`DateTimeDiff("mm", "2019-02-04T16:00:00.0000000", "2018-03-05T05:00:00.0000000")`, `-11`},
		{`DateTimeDiff("dd", "2019-02-04T16:00:00.0000000", "2018-03-05T05:00:00.0000000")`, `-336`},
		{`DateTimeDiff("hh", "2019-02-04T16:00:00.0000000", "2018-03-05T05:00:00.0000000")`, `-8075`},
		{`DateTimeDiff("ss", "2019-02-04T16:00:00.0000000", "2018-03-05T05:00:00.0000000")`, `-29070000`},
		{`DateTimeDiff("yyyy", "2018-03-05T05:00:00.0000000", "2019-02-04T16:00:00.0000000")`, `1`},
		{`DateTimeDiff("mm", "2018-03-05T05:00:00.0000000", "2019-02-04T16:00:00.0000000")`, `11`},
		{`DateTimeDiff("dd", "2018-03-05T05:00:00.0000000", "2019-02-04T16:00:00.0000000")`, `336`},
		{`DateTimeDiff("hh", "2018-03-05T05:00:00.0000000", "2019-02-04T16:00:00.0000000")`, `8075`},
		{`DateTimeDiff("ss", "2018-03-05T05:00:00.0000000", "2019-02-04T16:00:00.0000000")`, `29070000`},
		{`DateTimeDiff("yyyy", "2019-12-31T23:59:59.9999999Z", "2020-01-01T00:00:00.0000000Z")`, `1`},
		{`DateTimeDiff("ms", "2020-01-01T00:00:00.0000000Z", "2020-01-01T00:00:01.5000000Z")`, `1500`},
		{`DateTimePart("yyyy", "2016-05-29T08:30:00.1301617")`, `2016`},
		{`DateTimePart("mm", "2016-05-29T08:30:00.1301617")`, `5`},
		{`DateTimePart("dd", "2016-05-29T08:30:00.1301617")`, `29`},
		{`DateTimePart("hh", "2016-05-29T08:30:00.1301617")`, `8`},
		{`DateTimePart("mi", "2016-05-29T08:30:00.1301617")`, `30`},
		{`DateTimePart("ss", "2016-05-29T08:30:00.1301617")`, `0`},
		{`DateTimePart("ms", "2016-05-29T08:30:00.1301617")`, `130`},
		{`DateTimePart("mcs", "2016-05-29T08:30:00.1301617")`, `130161`},
		{`DateTimePart("ns", "2016-05-29T08:30:00.1301617")`, `130161700`},
		{`DateTimeFromParts(2017, 4, 20, 13, 15, 20, 3456789)`, `"2017-04-20T13:15:20.3456789Z"`},
		{`DateTimeFromParts(2017, 4, 20)`, `"2017-04-20T00:00:00.0000000Z"`},
		{`DateTimeFromParts(2017, 2, 30)`, ``},
		{`DateTimeFromParts(2017, 13, 1)`, ``},
		{`DateTimeBin("2021-06-28T17:24:29.2991234Z", "hh")`, `"2021-06-28T17:00:00.0000000Z"`},
		{`DateTimeBin("2021-06-28T17:24:29.2991234Z", "hh", 3)`, `"2021-06-28T15:00:00.0000000Z"`},
		{`DateTimeBin("2021-06-28T17:24:29.2991234Z", "dd")`, `"2021-06-28T00:00:00.0000000Z"`},
		{`DateTimeBin("2021-06-28T17:24:29.2991234Z", "dd", 7)`, `"2021-06-24T00:00:00.0000000Z"`},
		{`DateTimeBin("2021-06-28T17:24:29.2991234Z", "mm")`, `"2021-06-01T00:00:00.0000000Z"`},
		{`DateTimeBin("2021-06-28T17:24:29.2991234Z", "yyyy", 10)`, `"2020-01-01T00:00:00.0000000Z"`},
		{`DateTimeBin("2021-06-28T17:24:29.2991234Z", "dd", 0)`, ``},
		{`DateTimeToTicks("2015-05-19T12:00:00.0000000")`, `14320368000000000`},
		{`DateTimeToTicks("nonsense")`, ``},
		{`TicksToDateTime(15973607943002652)`, `"2020-08-13T23:19:54.3002652Z"`},
		{`TicksToDateTime(0)`, `"1970-01-01T00:00:00.0000000Z"`},
		{`TicksToDateTime(-116444736000000000)`, `"1601-01-01T00:00:00.0000000Z"`},
		{`TicksToDateTime(1.5)`, ``},
		{`DateTimeToTimestamp("2020-07-09T23:20:13.4575530Z")`, `1594336813457`},
		{`TimestampToDateTime(1594227912345)`, `"2020-07-08T17:05:12.3450000Z"`},
		{`TimestampToDateTime("1594227912345")`, ``},
	} {
		got, err := run(t, "SELECT VALUE "+tc.expr, nil, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if want := "[" + tc.want + "]"; got != want {
			t.Errorf("%s = %s, want %s", tc.expr, got, want)
		}
	}
}

// TestMoreFunctionsRefused: spatial, full-text and vector functions, and
// bad regular expressions and modifiers, are errors that say why.
func TestMoreFunctionsRefused(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`ST_DISTANCE({"type": "Point", "coordinates": [0, 0]}, {"type": "Point", "coordinates": [1, 1]})`, "spatial"},
		{`FullTextContains("a b", "a")`, "full-text"},
		{`VectorDistance([1], [1])`, "vector"},
		{`RegexMatch("a", "(a)\\1")`, "backreferences"},
		{`RegexMatch("a", "a", "q")`, "modifier"},
	} {
		_, err := run(t, "SELECT VALUE "+tc.expr, nil, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.expr, err, tc.want)
		}
	}
	got, err := run(t, `SELECT VALUE RAND() >= 0 AND RAND() < 1`, nil, nil)
	if err != nil || got != "[true]" {
		t.Errorf("RAND: %s %v", got, err)
	}
}
