package query

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Rows pinned from the examples of the Cosmos DB for NoSQL function
// reference carry the documented query and result; the others check
// wrong-type arguments (undefined) and edge cases.

func TestFuncsTypeAndConditional(t *testing.T) {
	runCases(t, nil, []evalCase{
		// IS_INTEGER (documented)
		{q: `SELECT VALUE {
		    smallDecimalValue: IS_INTEGER(3454.123),
		    integerValue: IS_INTEGER(5523432),
		    minIntegerValue: IS_INTEGER(-9223372036854775808),
		    maxIntegerValue: IS_INTEGER(9223372036854775807),
		    outOfRangeValue: IS_INTEGER(18446744073709551615)
		}`, want: `[{"smallDecimalValue":false,"integerValue":true,"minIntegerValue":true,"maxIntegerValue":true,"outOfRangeValue":false}]`},
		{q: `SELECT VALUE [IS_INTEGER("1"), IS_INTEGER(null), IS_INTEGER(undefined), IS_INTEGER([1]), IS_INTEGER(-0), IS_INTEGER(1e300)]`,
			want: `[[false,false,false,false,true,false]]`},
		// IIF (documented)
		{q: `SELECT VALUE {
		    evalTrue: IIF(true, 123, 456),
		    evalFalse: IIF(false, 123, 456),
		    evalNumberNotTrue: IIF(123, 123, 456),
		    evalStringNotTrue: IIF("ABC", 123, 456),
		    evalArrayNotTrue: IIF([1,2,3], 123, 456),
		    evalObjectNotTrue: IIF({"name": "Alice", "age": 20}, 123, 456)
		}`, want: `[{"evalTrue":123,"evalFalse":456,"evalNumberNotTrue":456,"evalStringNotTrue":456,"evalArrayNotTrue":456,"evalObjectNotTrue":456}]`},
		{q: `SELECT VALUE [IIF(undefined, 1, 2), IIF(true, undefined, 2), IIF(false, 1, undefined), IIF(null, "a", "b")]`, want: `[[2,"b"]]`},
		// CHOOSE (documented)
		{q: `SELECT VALUE CHOOSE(1, "adventure", "works", true, [1])`, want: `["adventure"]`},
		{q: `SELECT VALUE {
		    index_0: CHOOSE(0, "abc", 1, true, [1]),
		    index_1: CHOOSE(1, "abc", 1, true, [1]),
		    index_2: CHOOSE(2, "abc", 1, true, [1]),
		    index_3: CHOOSE(3, "abc", 1, true, [1]),
		    index_4: CHOOSE(4, "abc", 1, true, [1]),
		    index_5: CHOOSE(5, "abc", 1, true, [1])
		}`, want: `[{"index_1":"abc","index_2":1,"index_3":true,"index_4":[1]}]`},
		{q: `SELECT VALUE [CHOOSE("1", "a"), CHOOSE(1.5, "a", "b"), CHOOSE(-1, "a"), CHOOSE(null, "a"), CHOOSE(2, "a", undefined), CHOOSE(1e300, "a")]`, want: `[[]]`},
	})
}

func TestFuncsStrings(t *testing.T) {
	runCases(t, nil, []evalCase{
		// RegexMatch (documented)
		{q: `SELECT VALUE {
		    noModifiers: RegexMatch("abcd", "ABC"),
		    caseInsensitive: RegexMatch("abcd", "ABC", "i"),
		    wildcardCharacter: RegexMatch("abcd", "ab.", ""),
		    ignoreWhiteSpace: RegexMatch("abcd", "ab c", "x"),
		    caseInsensitiveAndIgnoreWhiteSpace: RegexMatch("abcd", "aB c", "ix"),
		    containNumberBetweenZeroAndNine: RegexMatch("03a", "[0-9]"),
		    containPrefix: RegexMatch("salt3824908", "salt{1}"),
		    containsFiveLetterWordStartingWithS: RegexMatch("shame", "s....", "i")
		}`, want: `[{"noModifiers":false,"caseInsensitive":true,"wildcardCharacter":true,"ignoreWhiteSpace":true,
		             "caseInsensitiveAndIgnoreWhiteSpace":true,"containNumberBetweenZeroAndNine":true,"containPrefix":true,
		             "containsFiveLetterWordStartingWithS":true}]`},
		{q: `SELECT VALUE [RegexMatch("a\nb", "^b$"), RegexMatch("a\nb", "^b$", "m"), RegexMatch("a\nb", "a.b"), RegexMatch("a\nb", "a.b", "s"),
		                   RegexMatch("a b", "a[ ]b", "x"), RegexMatch("a b", "a\\ b", "x"), RegexMatch("ab", "a # comment\n b", "x"), RegexMatch("日本", "^..$")]`,
			want: `[[false,true,false,true,true,true,true,true]]`},
		// wrong types, bad modifiers, patterns RE2 refuses (backreference, lookahead), bad patterns
		{q: `SELECT VALUE [RegexMatch(1, "a"), RegexMatch("a", 1), RegexMatch("a", "a", 1), RegexMatch("a", "a", "q"), RegexMatch("aa", "(a)\\1"),
		                   RegexMatch("ab", "a(?=b)"), RegexMatch("a", "("), RegexMatch(undefined, "a")]`, want: `[[]]`},
		// StringToArray (documented)
		{q: `SELECT VALUE {
		    parseEmptyArray: StringToArray("[]"),
		    parseArray: StringToArray('[ "coats", "gloves", "hats" ]'),
		    complexArray: StringToArray('[ { "types": [ "coats", "gloves" ] }, [ "hats" ], 76, false, null ]'),
		    nestedArray: StringToArray('[ [ "coats", "gloves" ], [ "hats" ] ]'),
		    invalidArray: StringToArray("[ 'coats', 'gloves', 'hats' ]"),
		    parseUndefined: StringToArray(undefined),
		    parseNull: StringToArray(null)
		}`, want: `[{"parseEmptyArray":[],"parseArray":["coats","gloves","hats"],
		             "complexArray":[{"types":["coats","gloves"]},["hats"],76,false,null],
		             "nestedArray":[["coats","gloves"],["hats"]]}]`},
		// StringToBoolean (documented)
		{q: `SELECT VALUE {
		    parseBooleanString: StringToBoolean("true"),
		    parseWithPrefix: StringToBoolean("true  "),
		    parseWithSuffix: StringToBoolean("  false"),
		    parseWithWhitespace: StringToBoolean("  false  "),
		    parseBoolean: StringToBoolean(true),
		    parseUndefined: StringToBoolean(undefined),
		    parseNull: StringToBoolean(null)
		}`, want: `[{"parseBooleanString":true,"parseWithPrefix":true,"parseWithSuffix":false,"parseWithWhitespace":false}]`},
		// StringToNull (documented)
		{q: `SELECT VALUE {
		    parseNullString: StringToNull("null"),
		    parseWithPrefix: StringToNull("null  "),
		    parseWithSuffix: StringToNull("  null"),
		    parseWithWhitespace: StringToNull("  null  "),
		    parseUppercase: StringToNull("NULL"),
		    parseTitlecase: StringToNull("Null"),
		    parseNull: StringToNull(null),
		    parseUndefined: StringToNull(undefined)
		}`, want: `[{"parseNullString":null,"parseWithPrefix":null,"parseWithSuffix":null,"parseWithWhitespace":null}]`},
		// StringToNumber (documented, without the NaN and Infinity rows: not literals here)
		{q: `SELECT VALUE {
		    parseIntegerString: StringToNumber("100"),
		    parseDecimalString: StringToNumber("3.14"),
		    parseWithWhitespace: StringToNumber("   60   "),
		    parseScientific: StringToNumber("-1.79769e+308"),
		    parseInvalid: StringToNumber("Hello"),
		    parseUndefined: StringToNumber(undefined),
		    parseNull: StringToNumber(null)
		}`, want: `[{"parseIntegerString":100,"parseDecimalString":3.14,"parseWithWhitespace":60,"parseScientific":-1.79769e+308}]`},
		{q: `SELECT VALUE [StringToNumber("1e400"), StringToNumber("0x1F"), StringToNumber("1 2"), StringToNumber(""), StringToNumber("[1]"), StringToNumber(5)]`, want: `[[]]`},
		// StringToObject (documented)
		{q: `SELECT VALUE {
		    parseEmptyObject: StringToObject("{}"),
		    parseObjectWithProperty: StringToObject('{"isAvailable": true}'),
		    parseObjectNested: StringToObject('{"division": {"name": "Sales"}}'),
		    parseObjectInvalidJson: StringToObject("{'price': 27.55}"),
		    parseUndefined: StringToNumber(undefined),
		    parseNull: StringToNumber(null)
		}`, want: `[{"parseEmptyObject":{},"parseObjectWithProperty":{"isAvailable":true},"parseObjectNested":{"division":{"name":"Sales"}}}]`},
		{q: `SELECT VALUE [StringToObject("[]"), StringToObject({}), StringToObject('{"a":1} x'), StringToArray("{}"), StringToBoolean("True")]`, want: `[[]]`},
		{q: `SELECT VALUE StringToObject('{"a": "x\\u00e9"}').a`, want: `["xé"]`},
		// StringJoin (documented)
		{q: `SELECT VALUE {
		    joinUsingSpaces: StringJoin(["Iropa", "Mountain", "Bike"], " "),
		    joinUsingEmptyString: StringJoin(["Iropa", "Mountain", "Bike"], ""),
		    joinUsingUndefined: StringJoin(["Iropa", "Mountain", "Bike"], undefined),
		    joinUsingCharacter: StringJoin(["6", "7", "4", "3"], "A"),
		    joinUsingPhrase: StringJoin(["Adventure", "LT"], "Works")
		}`, want: `[{"joinUsingSpaces":"Iropa Mountain Bike","joinUsingEmptyString":"IropaMountainBike","joinUsingCharacter":"6A7A4A3","joinUsingPhrase":"AdventureWorksLT"}]`},
		{q: `SELECT VALUE [StringJoin([], ","), StringJoin(["a"], ",")]`, want: `[["","a"]]`},
		{q: `SELECT VALUE [StringJoin(["a", 1], ","), StringJoin("a", ","), StringJoin(["a"], 1)]`, want: `[[]]`},
		// StringSplit (documented)
		{q: `SELECT VALUE {
		    seperateOnLetter: StringSplit("Handlebar", "e"),
		    seperateOnSymbol: StringSplit("CARBON_STEEL_BIKE_WHEEL", "_"),
		    seperateOnWhitespace: StringSplit("Road Bike", " "),
		    seperateOnPhrase: StringSplit("xenmoun mountain bike", "moun"),
		    undefinedSeperator: StringSplit("AluminumBikeFrame", undefined),
		    emptySeparatorString: StringSplit("Helmet", ""),
		    emptySourceString: StringSplit("", "")
		}`, want: `[{"seperateOnLetter":["Handl","bar"],"seperateOnSymbol":["CARBON","STEEL","BIKE","WHEEL"],"seperateOnWhitespace":["Road","Bike"],
		             "seperateOnPhrase":["xen"," ","tain bike"],"emptySeparatorString":["Helmet"],"emptySourceString":[""]}]`},
		{q: `SELECT VALUE [StringSplit(1, ","), StringSplit("a", 1)]`, want: `[[]]`},
		{q: `SELECT VALUE [StringSplit(",a,", ","), StringSplit("a", ",")]`, want: `[[["","a",""],["a"]]]`},
		// LastIndexOf
		{q: `SELECT VALUE [LastIndexOf("abcabc", "bc"), LastIndexOf("abcabc", "x"), LastIndexOf("abcabc", "bc", 3), LastIndexOf("abcabc", "bc", 2),
		                   LastIndexOf("abcabc", "bc", 0), LastIndexOf("abc", ""), LastIndexOf("😀a😀a", "a"), LastIndexOf("abc", "c", -1), LastIndexOf("abc", "c", 99)]`,
			want: `[[4,-1,1,1,-1,3,5,-1,2]]`},
		{q: `SELECT VALUE [LastIndexOf(1, "a"), LastIndexOf("a", 1), LastIndexOf("a", "a", "1")]`, want: `[[]]`},
		// The existing INDEX_OF start and case-insensitive flags stay.
		{q: `SELECT VALUE [INDEX_OF("abcabc", "c", 3), CONTAINS("ABC", "b", true), STARTSWITH("ABC", "a", true), ENDSWITH("ABC", "c", true)]`, want: `[[5,true,true,true]]`},
	})
}

func TestFuncsMath(t *testing.T) {
	runCases(t, nil, []evalCase{
		// NumberBin (documented)
		{q: `SELECT VALUE {
		    roundToNegativeHundreds: NumberBin(37.752, -100),
		    roundToTens: NumberBin(37.752, 10),
		    roundToOnes: NumberBin(37.752, 1),
		    roundToZeroes: NumberBin(37.752, 0),
		    roundToOneTenths: NumberBin(37.752, 0.1),
		    roundToOneHundreds: NumberBin(37.752, 0.01)
		}`, want: `[{"roundToNegativeHundreds":100,"roundToTens":30,"roundToOnes":37,"roundToOneTenths":37.7,"roundToOneHundreds":37.75}]`},
		{q: `SELECT VALUE [NumberBin(-1.5), NumberBin(7), NumberBin("7"), NumberBin(7, "1")]`, want: `[[-2,7]]`},
		// IntAdd, IntSub, IntMul, IntDiv, IntMod (documented)
		{q: `SELECT VALUE {addNumber: IntAdd(20, 10), addZero: IntAdd(20, 0), addDecimal: IntAdd(20, 0.10)}`, want: `[{"addNumber":30,"addZero":20}]`},
		{q: `SELECT VALUE {
		    negativeResult: IntSub(25, 50),
		    positiveResult: IntSub(25, 15),
		    subtractSameNumber: IntSub(25, 25),
		    subtractZero: IntSub(25, 0),
		    subtractDecimal: IntSub(25, 2.5)
		}`, want: `[{"negativeResult":-25,"positiveResult":10,"subtractSameNumber":0,"subtractZero":25}]`},
		{q: `SELECT VALUE {
		    multiply: IntMul(5, 2),
		    negativeResult: IntMul(5, -2),
		    positiveResult: IntMul(-5, -2),
		    square: IntMul(5, 5),
		    cube: IntMul(5, IntMul(5, 5)),
		    multiplyZero: IntMul(5, 0),
		    multiplyDecimal: IntMul(5, 0.5)
		}`, want: `[{"multiply":10,"negativeResult":-10,"positiveResult":10,"square":25,"cube":125,"multiplyZero":0}]`},
		{q: `SELECT VALUE {
		    divide: IntDiv(10, 2),
		    negativeResult: IntDiv(10, -2),
		    positiveResult: IntDiv(-10, -2),
		    resultOne: IntDiv(10, 10),
		    divideZero: IntDiv(10, 0),
		    divideDecimal: IntDiv(10, 0.1)
		}`, want: `[{"divide":5,"negativeResult":-5,"positiveResult":5,"resultOne":1}]`},
		{q: `SELECT VALUE {
		    mod: IntMod(12, 5),
		    positiveResult: IntMod(12, -5),
		    negativeResult: IntMod(-12, -5),
		    resultZero: IntMod(15, 5),
		    modZero: IntMod(12, 0),
		    modDecimal: IntMod(12, 0.2)
		}`, want: `[{"mod":2,"positiveResult":2,"negativeResult":-2,"resultZero":0}]`},
		// bitwise (documented)
		{q: `SELECT VALUE {compareNumbers: IntBitAnd(15, 25), compareZero: IntBitAnd(15, 0), compareSameNumber: IntBitAnd(15, 15), compareDecimal: IntBitAnd(15, 1.5)}`,
			want: `[{"compareNumbers":9,"compareZero":0,"compareSameNumber":15}]`},
		{q: `SELECT VALUE {inclusiveOr: IntBitOr(56, 100), inclusiveOrSame: IntBitOr(56, 56), inclusiveOrZero: IntBitOr(56, 0), inclusiveOrDecimal: IntBitOr(56, 0.1)}`,
			want: `[{"inclusiveOr":124,"inclusiveOrSame":56,"inclusiveOrZero":56}]`},
		{q: `SELECT VALUE {exclusiveOr: IntBitXor(56, 100), exclusiveOrSame: IntBitXor(56, 56), exclusiveOrZero: IntBitXor(56, 0), exclusiveOrDecimal: IntBitXor(56, 0.1)}`,
			want: `[{"exclusiveOr":92,"exclusiveOrSame":0,"exclusiveOrZero":56}]`},
		{q: `SELECT VALUE {complementNumber: IntBitNot(65), complementZero: IntBitNot(0), complementDecimal: IntBitNot(0.1)}`,
			want: `[{"complementNumber":-66,"complementZero":-1}]`},
		{q: `SELECT VALUE {shiftInteger: IntBitLeftShift(16, 4), shiftDecimal: IntBitLeftShift(16, 0.4)}`, want: `[{"shiftInteger":256}]`},
		{q: `SELECT VALUE {shiftInteger: IntBitRightShift(16, 4), shiftDecimal: IntBitRightShift(16, 0.4)}`, want: `[{"shiftInteger":1}]`},
		// 64-bit semantics, unlike the 32-bit operators
		{q: `SELECT VALUE [IntBitLeftShift(1, 40), 1 << 40, IntBitRightShift(-16, 2), IntBitOr(4294967296, 1), IntAdd(9007199254740992, 0),
		                   IntMul(4294967296, 4294967296), IntDiv(-9223372036854775808, -1), IntMod(-9223372036854775808, -1), IntBitLeftShift(1, 64)]`,
			want: `[[1099511627776,256,-4,4294967297,9007199254740992,0,-9223372036854776000,0,1]]`},
		{q: `SELECT VALUE [IntAdd("1", 1), IntAdd(1, null), IntAdd(1e300, 1), IntBitNot("1"), IntSub(undefined, 1), IntDiv(1, 0.5)]`, want: `[[]]`},
		// RAND is in [0, 1)
		{q: `SELECT VALUE RAND() >= 0 AND RAND() < 1 AND IS_NUMBER(RAND())`, want: `[true]`},
	})
}

func TestFuncsArrays(t *testing.T) {
	runCases(t, nil, []evalCase{
		// ARRAY_CONTAINS_ANY and ARRAY_CONTAINS_ALL (documented)
		{q: `SELECT VALUE {
		  matchesEntireArray: ARRAY_CONTAINS_ANY([1, true, "3", [1,2,3]], 1, true, "3", [1,2,3]),
		  matchesSomeValues: ARRAY_CONTAINS_ANY([1, 2, 3, 4], 2, 3, 4, 5),
		  matchSingleValue: ARRAY_CONTAINS_ANY([1, 2, 3, 4], 1, undefined),
		  noMatches: ARRAY_CONTAINS_ANY([1, 2, 3, 4], 5, 6, 7, 8),
		  emptyArray: ARRAY_CONTAINS_ANY([], 1, 2, 3),
		  noMatchesUndefined: ARRAY_CONTAINS_ANY([1, 2, 3, 4], 5, undefined)
		}`, want: `[{"matchesEntireArray":true,"matchesSomeValues":true,"matchSingleValue":true,"noMatches":false,"emptyArray":false}]`},
		{q: `SELECT VALUE {
		  matchesEntireArray: ARRAY_CONTAINS_ALL([1, true, "3", [1,2,3]], 1, true, "3", [1,2,3]),
		  matchesSomeValues: ARRAY_CONTAINS_ALL([1, 2, 3, 4], 2, 3, 4, 5),
		  matchSingleValue: ARRAY_CONTAINS_ALL([1, 2, 3, 4], 1, undefined),
		  noMatches: ARRAY_CONTAINS_ALL([1, 2, 3, 4], 5, 6, 7, 8),
		  emptyArray: ARRAY_CONTAINS_ALL([], 1, 2, 3),
		  noMatchesUndefined: ARRAY_CONTAINS_ALL([1, 2, 3, 4], 5, undefined)
		}`, want: `[{"matchesEntireArray":true,"matchesSomeValues":false,"noMatches":false,"emptyArray":false,"noMatchesUndefined":false}]`},
		{q: `SELECT VALUE [ARRAY_CONTAINS_ANY("a", "a"), ARRAY_CONTAINS_ALL({"a":1}, 1), ARRAY_CONTAINS_ANY([{"a":1}], {"a":1}), ARRAY_CONTAINS_ALL([{"a":1,"b":2}], {"b":2,"a":1})]`,
			want: `[[true,true]]`},
		// SetIntersect and SetUnion (documented)
		{q: `SELECT VALUE {
		    simpleIntersect: SetIntersect([1, 2, 3, 4], [3, 4, 5, 6]),
		    emptyIntersect: SetIntersect([1, 2, 3, 4], []),
		    duplicatesIntersect: SetIntersect([1, 2, 3, 4], [1, 1, 1, 1]),
		    noMatchesIntersect: SetIntersect([1, 2, 3, 4], ["A", "B"]),
		    unorderedIntersect: SetIntersect([1, 2, "A", "B"], ["A", 1])
		}`, want: `[{"simpleIntersect":[3,4],"emptyIntersect":[],"duplicatesIntersect":[1],"noMatchesIntersect":[],"unorderedIntersect":["A",1]}]`},
		{q: `SELECT VALUE {
		    simpleUnion: SetUnion([1, 2, 3, 4], [3, 4, 5, 6]),
		    emptyUnion: SetUnion([1, 2, 3, 4], []),
		    duplicatesUnion: SetUnion([1, 2, 3, 4], [1, 1, 1, 1]),
		    unorderedUnion: SetUnion([1, 2, "A", "B"], ["A", 1])
		}`, want: `[{"simpleUnion":[1,2,3,4,5,6],"emptyUnion":[1,2,3,4],"duplicatesUnion":[1,2,3,4],"unorderedUnion":[1,2,"A","B"]}]`},
		{q: `SELECT VALUE [SetUnion([{"a":1,"b":2}], [{"b":2,"a":1}, 1, "1"]), SetIntersect([[1,2], null], [null, [1,2], [2,1]])]`,
			want: `[[[{"a":1,"b":2},1,"1"],[null,[1,2]]]]`},
		{q: `SELECT VALUE [SetUnion([1], "a"), SetIntersect(null, [1]), SetUnion(undefined, [])]`, want: `[[]]`},
		// ObjectToArray (documented)
		{q: `SELECT VALUE ObjectToArray({"a": "12345", "b": "67890"})`, want: `[[{"k":"a","v":"12345"},{"k":"b","v":"67890"}]]`},
		{q: `SELECT VALUE ObjectToArray({"a": "12345", "b": "67890"}, "name")`, want: `[[{"name":"a","v":"12345"},{"name":"b","v":"67890"}]]`},
		{q: `SELECT VALUE ObjectToArray({"a": "12345", "b": "67890"}, "key", "value")`, want: `[[{"key":"a","value":"12345"},{"key":"b","value":"67890"}]]`},
		{q: `SELECT VALUE [ObjectToArray({}), ObjectToArray({"a": {"b": [1]}, "c": undefined})]`, want: `[[[],[{"k":"a","v":{"b":[1]}}]]]`},
		{q: `SELECT VALUE [ObjectToArray([1]), ObjectToArray("a"), ObjectToArray({"a":1}, 1), ObjectToArray({"a":1}, "k", null)]`, want: `[[]]`},
	})
	// ObjectToArray over a stored item.
	runCases(t, families, []evalCase{
		{q: `SELECT VALUE ObjectToArray(f.address) FROM f WHERE f.id = "AndersenFamily"`,
			want: `[[{"k":"state","v":"WA"},{"k":"county","v":"King"},{"k":"city","v":"Seattle"}]]`},
	})
}

func TestFuncsDateTime(t *testing.T) {
	runCases(t, nil, []evalCase{
		// DateTimeAdd (documented)
		{q: `SELECT VALUE {
		    addOneYear: DateTimeAdd("yyyy", 1, "2020-07-03T00:00:00.0000000"),
		    addOneMonth: DateTimeAdd("mm", 1, "2020-07-03T00:00:00.0000000"),
		    addOneDay: DateTimeAdd("dd", 1, "2020-07-03T00:00:00.0000000"),
		    addOneHour: DateTimeAdd("hh", 1, "2020-07-03T00:00:00.0000000"),
		    subtractOneYear: DateTimeAdd("yyyy", -1, "2020-07-03T00:00:00.0000000"),
		    subtractOneMonth: DateTimeAdd("mm", -1, "2020-07-03T00:00:00.0000000"),
		    subtractOneDay: DateTimeAdd("dd", -1, "2020-07-03T00:00:00.0000000"),
		    subtractOneHour: DateTimeAdd("hh", -1, "2020-07-03T00:00:00.0000000"),
		    modifySecondsExpression: DateTimeAdd("ss", 5 * -5, "2020-07-03T00:00:00.0000000")
		}`, want: `[{"addOneYear":"2021-07-03T00:00:00.0000000Z","addOneMonth":"2020-08-03T00:00:00.0000000Z","addOneDay":"2020-07-04T00:00:00.0000000Z",
		             "addOneHour":"2020-07-03T01:00:00.0000000Z","subtractOneYear":"2019-07-03T00:00:00.0000000Z","subtractOneMonth":"2020-06-03T00:00:00.0000000Z",
		             "subtractOneDay":"2020-07-02T00:00:00.0000000Z","subtractOneHour":"2020-07-02T23:00:00.0000000Z","modifySecondsExpression":"2020-07-02T23:59:35.0000000Z"}]`},
		{q: `SELECT VALUE [DateTimeAdd("month", 1, "2020-01-31T10:00:00Z"), DateTimeAdd("yy", 1, "2020-02-29"), DateTimeAdd("ms", 1500, "2020-12-31T23:59:59.0000000Z"),
		                   DateTimeAdd("mcs", 1, "2020-01-01T00:00:00Z"), DateTimeAdd("ns", 300, "2020-01-01T00:00:00Z"), DateTimeAdd("MI", 90, "2020-01-01 00:00:00")]`,
			want: `[["2020-02-29T10:00:00.0000000Z","2021-02-28T00:00:00.0000000Z","2021-01-01T00:00:00.5000000Z",
			         "2020-01-01T00:00:00.0000010Z","2020-01-01T00:00:00.0000003Z","2020-01-01T01:30:00.0000000Z"]]`},
		{q: `SELECT VALUE [DateTimeAdd("week", 1, "2020-01-01"), DateTimeAdd("dd", 1.5, "2020-01-01"), DateTimeAdd("dd", 1, "2020-13-01"), DateTimeAdd("dd", 1, 5),
		                   DateTimeAdd("yyyy", 8000, "2020-01-01"), DateTimeAdd("dd", 1e15, "2020-01-01"), DateTimeAdd("ss", -1, "0001-01-01T00:00:00Z"), DateTimeAdd(1, 1, "2020-01-01")]`,
			want: `[[]]`},
		// DateTimeBin (documented)
		{q: `SELECT VALUE {
		    binDay: DateTimeBin("2021-01-08T18:35:00.0000000", "dd"),
		    binHour: DateTimeBin("2021-01-08T18:35:00.0000000", "hh"),
		    binSecond: DateTimeBin("2021-01-08T18:35:00.0000000", "ss"),
		    binFiveHours: DateTimeBin("2021-01-08T18:35:00.0000000", "hh", 5),
		    binSevenDaysUnixEpoch: DateTimeBin("2021-01-08T18:35:00.0000000", "dd", 7),
		    binSevenDaysWindowsEpoch: DateTimeBin("2021-01-08T18:35:00.0000000", "dd", 7, "1601-01-01T00:00:00.0000000")
		}`, want: `[{"binDay":"2021-01-08T00:00:00.0000000Z","binHour":"2021-01-08T18:00:00.0000000Z","binSecond":"2021-01-08T18:35:00.0000000Z",
		             "binFiveHours":"2021-01-08T15:00:00.0000000Z","binSevenDaysUnixEpoch":"2021-01-07T00:00:00.0000000Z","binSevenDaysWindowsEpoch":"2021-01-04T00:00:00.0000000Z"}]`},
		{q: `SELECT VALUE [DateTimeBin("1969-12-31T23:30:00Z", "hh"), DateTimeBin("2021-01-08T18:35:12.3456789Z", "ms", 100), DateTimeBin("2021-01-08T18:35:00Z", "dd", 1e15)]`,
			want: `[["1969-12-31T23:00:00.0000000Z","2021-01-08T18:35:12.3000000Z","1970-01-01T00:00:00.0000000Z"]]`},
		{q: `SELECT VALUE [DateTimeBin("2021-01-08", "yyyy"), DateTimeBin("2021-01-08", "mm"), DateTimeBin("2021-01-08", "dd", 0), DateTimeBin("2021-01-08", "dd", -1),
		                   DateTimeBin("2021-01-08", "dd", 1.5), DateTimeBin("2021-01-08", "dd", 1, "1600-01-01"), DateTimeBin("x", "dd"), DateTimeBin("2021-01-08", "dd", 1, 5)]`,
			want: `[[]]`},
		// DateTimeDiff (documented)
		{q: `SELECT VALUE {
		    diffPastYears: DateTimeDiff("yyyy", "2019-02-04T16:00:00.0000000", "2018-03-05T05:00:00.0000000"),
		    diffPastMonths: DateTimeDiff("mm", "2019-02-04T16:00:00.0000000", "2018-03-05T05:00:00.0000000"),
		    diffPastDays: DateTimeDiff("dd", "2019-02-04T16:00:00.0000000", "2018-03-05T05:00:00.0000000"),
		    diffPastHours: DateTimeDiff("hh", "2019-02-04T16:00:00.0000000", "2018-03-05T05:00:00.0000000"),
		    diffPastSeconds: DateTimeDiff("ss", "2019-02-04T16:00:00.0000000", "2018-03-05T05:00:00.0000000"),
		    diffFutureYears: DateTimeDiff("yyyy", "2018-03-05T05:00:00.0000000", "2019-02-04T16:00:00.0000000"),
		    diffFutureMonths: DateTimeDiff("mm", "2018-03-05T05:00:00.0000000", "2019-02-04T16:00:00.0000000"),
		    diffFutureDays: DateTimeDiff("dd", "2018-03-05T05:00:00.0000000", "2019-02-04T16:00:00.0000000"),
		    diffFutureHours: DateTimeDiff("hh", "2018-03-05T05:00:00.0000000", "2019-02-04T16:00:00.0000000"),
		    diffFutureSeconds: DateTimeDiff("ss", "2018-03-05T05:00:00.0000000", "2019-02-04T16:00:00.0000000")
		}`, want: `[{"diffPastYears":-1,"diffPastMonths":-11,"diffPastDays":-336,"diffPastHours":-8075,"diffPastSeconds":-29070000,
		             "diffFutureYears":1,"diffFutureMonths":11,"diffFutureDays":336,"diffFutureHours":8075,"diffFutureSeconds":29070000}]`},
		{q: `SELECT VALUE [DateTimeDiff("yyyy", "2020-12-31T23:59:59Z", "2021-01-01T00:00:00Z"), DateTimeDiff("ms", "2020-01-01T00:00:00Z", "2020-01-01T00:00:00.0019999Z"),
		                   DateTimeDiff("ns", "2020-01-01T00:00:00Z", "2020-01-01T00:00:00.0000012Z"), DateTimeDiff("dd", "1969-12-31T23:00:00Z", "1970-01-01T01:00:00Z")]`,
			want: `[[1,1,1200,1]]`},
		{q: `SELECT VALUE [DateTimeDiff("x", "2020-01-01", "2020-01-02"), DateTimeDiff("dd", "2020-01-01", 1), DateTimeDiff("dd", "2020-02-30", "2020-01-01")]`, want: `[[]]`},
		// DateTimeFromParts (documented)
		{q: `SELECT VALUE {
		    constructMinArguments: DateTimeFromParts(2017, 4, 20),
		    constructMinEquivalent: DateTimeFromParts(2017, 4, 20, 0, 0, 0, 0),
		    constructAllArguments: DateTimeFromParts(2017, 4, 20, 13, 15, 20, 3456789),
		    constructPartialArguments: DateTimeFromParts(2017, 4, 20, 13, 15),
		    constructInvalidArguments: DateTimeFromParts(-2000, -1, -1)
		}`, want: `[{"constructMinArguments":"2017-04-20T00:00:00.0000000Z","constructMinEquivalent":"2017-04-20T00:00:00.0000000Z",
		             "constructAllArguments":"2017-04-20T13:15:20.3456789Z","constructPartialArguments":"2017-04-20T13:15:00.0000000Z"}]`},
		{q: `SELECT VALUE [DateTimeFromParts(2021, 2, 29), DateTimeFromParts(2020, 1, 1, 24), DateTimeFromParts(2020, 1, 1, 0, 0, 0, 10000000), DateTimeFromParts("2020", 1, 1),
		                   DateTimeFromParts(2020.5, 1, 1), DateTimeFromParts(10000, 1, 1), DateTimeFromParts(0, 1, 1)]`, want: `[[]]`},
		// DateTimePart (documented)
		{q: `SELECT VALUE {
		    getYear: DateTimePart("yyyy", "2016-05-29T08:30:00.1301617"),
		    getMonth: DateTimePart("mm", "2016-05-29T08:30:00.1301617"),
		    getDay: DateTimePart("dd", "2016-05-29T08:30:00.1301617"),
		    getHour: DateTimePart("hh", "2016-05-29T08:30:00.1301617"),
		    getMinute: DateTimePart("mi", "2016-05-29T08:30:00.1301617"),
		    getSecond: DateTimePart("ss", "2016-05-29T08:30:00.1301617"),
		    getMillisecond: DateTimePart("ms", "2016-05-29T08:30:00.1301617"),
		    getMicrosecond: DateTimePart("mcs", "2016-05-29T08:30:00.1301617"),
		    getNanosecond: DateTimePart("ns", "2016-05-29T08:30:00.1301617")
		}`, want: `[{"getYear":2016,"getMonth":5,"getDay":29,"getHour":8,"getMinute":30,"getSecond":0,"getMillisecond":130,"getMicrosecond":130161,"getNanosecond":130161700}]`},
		{q: `SELECT VALUE [DateTimePart("weekday", "2016-05-29"), DateTimePart("yyyy", "2016-05-29T08:30:00.12345678Z"), DateTimePart("yyyy", "2016-05-29T8:30"),
		                   DateTimePart("yyyy", "2016-05-29 08:30"), DateTimePart("yyyy", "2016-05-29T08:30:00+01:00"), DateTimePart("yyyy", null)]`, want: `[[]]`},
		// DateTimeToTicks, DateTimeToTimestamp, TicksToDateTime, TimestampToDateTime (documented)
		{q: `SELECT VALUE {ticks: DateTimeToTicks("2015-05-19T12:00:00.0000000")}`, want: `[{"ticks":14320368000000000}]`},
		{q: `SELECT VALUE {timestamp: DateTimeToTimestamp("2015-05-19T12:00:00.0000000")}`, want: `[{"timestamp":1432036800000}]`},
		{q: `SELECT VALUE {
		    parseTicks: TicksToDateTime(15973607943002652),
		    parseUnixEpoch: TicksToDateTime(0),
		    parseWindowsEpoch: TicksToDateTime(-116444736000000000)
		}`, want: `[{"parseTicks":"2020-08-13T23:19:54.3002652Z","parseUnixEpoch":"1970-01-01T00:00:00.0000000Z","parseWindowsEpoch":"1601-01-01T00:00:00.0000000Z"}]`},
		{q: `SELECT VALUE {
		    parseTicks: TimestampToDateTime(1597360794300),
		    parseUnixEpoch: TimestampToDateTime(0),
		    parseWindowsEpoch: TimestampToDateTime(-11644473600000)
		}`, want: `[{"parseTicks":"2020-08-13T23:19:54.3000000Z","parseUnixEpoch":"1970-01-01T00:00:00.0000000Z","parseWindowsEpoch":"1601-01-01T00:00:00.0000000Z"}]`},
		{q: `SELECT VALUE [DateTimeToTimestamp("1969-12-31T23:59:59.9999999Z"), DateTimeToTicks("0001-01-01"), TicksToDateTime(DateTimeToTicks("9999-12-31T23:59:59.9999999Z")),
		                   TimestampToDateTime(1.9)]`,
			want: `[[-1,-621355968000000000,"9999-12-31T23:59:59.9999999Z","1970-01-01T00:00:00.0010000Z"]]`},
		{q: `SELECT VALUE [TicksToDateTime("0"), TicksToDateTime(1e300), TimestampToDateTime(-1e20), DateTimeToTicks(0), DateTimeToTimestamp("2020")]`, want: `[[]]`},
		// The static clock functions read the query's single now.
		{q: `SELECT VALUE [GetCurrentDateTimeStatic() = GetCurrentDateTime(), GetCurrentTicksStatic() = GetCurrentTicks(), GetCurrentTimestampStatic() = GetCurrentTimestamp(),
		                   DateTimeToTimestamp(GetCurrentDateTimeStatic()) = GetCurrentTimestampStatic()]`, want: `[[true,true,true,true]]`},
	})
}

// TestFuncsRefused: DocumentId parses but fails the query when evaluated.
func TestFuncsRefused(t *testing.T) {
	for _, q := range []string{
		`SELECT VALUE DocumentId({})`,
	} {
		_, err := run(t, q, nil, nil)
		var qe *Error
		require.ErrorAs(t, err, &qe, q)
		assert.Contains(t, err.Error(), "is not supported", q)
	}
}

// TestFuncsLimits: functions that build values respect MaxValueSize.
func TestFuncsLimits(t *testing.T) {
	big := strings.Repeat("a", MaxValueSize/2)
	for _, c := range []struct {
		q      string
		params map[string]any
	}{
		{`SELECT VALUE StringSplit(@s, "a")`, map[string]any{"@s": big}},
		{`SELECT VALUE StringJoin([@s, @s, @s], ",")`, map[string]any{"@s": big}},
		{`SELECT VALUE SetUnion([@s, "x"], [@s, @s, "y"])`, map[string]any{"@s": big}},
		{`SELECT VALUE ObjectToArray({"a": @s, "b": @s, "c": @s})`, map[string]any{"@s": big}},
	} {
		_, err := run(t, c.q, c.params, nil)
		var qe *Error
		require.ErrorAs(t, err, &qe, c.q)
		assert.Contains(t, err.Error(), "limit", c.q)
	}
	got, err := run(t, `SELECT VALUE ARRAY_LENGTH(StringSplit(@s, "b"))`, map[string]any{"@s": big}, nil)
	require.NoError(t, err)
	assert.Equal(t, `[1]`, got)
}

func init() {
	fuzzSeeds = append(fuzzSeeds,
		`SELECT VALUE [IIF(c.n > 0, CHOOSE(2, "a", c.s), IS_INTEGER(c.n)), RegexMatch(c.s, "^h.*o$", "ix"), StringSplit(c.s, "l"), StringJoin(c.tags, "-")] FROM c`,
		`SELECT VALUE [StringToArray(c.s), StringToObject(TOSTRING(c.x)), StringToNumber(" 1e3 "), StringToBoolean("true"), StringToNull("null"), LastIndexOf(c.s, "l", 3)] FROM c`,
		`SELECT VALUE [NumberBin(c.n, 0.5), IntAdd(c.n, 1), IntDiv(c.n, 0), IntBitLeftShift(c.n, 70), IntBitNot(c.n), RAND() < 1] FROM c`,
		`SELECT VALUE [ARRAY_CONTAINS_ANY(c.tags, "a", 1), ARRAY_CONTAINS_ALL(c.tags, "a", "b"), SetIntersect(c.tags, ["a"]), SetUnion(c.tags, c.x.y), ObjectToArray(c.x, "k", "k")] FROM c`,
		`SELECT VALUE [DateTimeAdd("mm", c.n, "2020-01-31T00:00:00Z"), DateTimeBin(GetCurrentDateTime(), "hh", 3, "1601-01-01"), DateTimeDiff("ns", "0001-01-01", "9999-12-31"), DateTimeFromParts(2020, 2, 29, 1, 2, 3, 4), DateTimePart("mcs", GetCurrentDateTimeStatic()), TicksToDateTime(DateTimeToTicks("2020-01-01")), TimestampToDateTime(DateTimeToTimestamp("2020-01-01T00:00:00.1234567Z"))]`,
		`SELECT VALUE ST_DISTANCE(c.x, c.x) FROM c`,
	)
}

func TestFuncsNewer(t *testing.T) {
	runCases(t, nil, []evalCase{
		// CONTAINS_ANY_CI/CS, CONTAINS_ALL_CI/CS (documented)
		{q: `SELECT VALUE {
		    "case1": CONTAINS_ANY_CI("Have a nice day!", "have", "nice", "day!"),
		    "case2": CONTAINS_ANY_CI("Have a nice day!", "HAVE", "NICE", "DAY!"),
		    "case3": CONTAINS_ANY_CI("Have a nice day!", "had", "nice", "day!"),
		    "case4": CONTAINS_ANY_CI("Have a nice day!", undefined, "nice", "day!"),
		    "case5": CONTAINS_ANY_CI("Have a nice day!", undefined, "had")
		}`, want: `[{"case1":true,"case2":true,"case3":true,"case4":true}]`},
		{q: `SELECT VALUE {
		    "case1": CONTAINS_ANY_CS("Have a nice day!", "have", "nice", "day!"),
		    "case2": CONTAINS_ANY_CS("Have a nice day!", "HAVE", "NICE", "DAY!"),
		    "case3": CONTAINS_ANY_CS("Have a nice day!", "had", "nice", "day!"),
		    "case4": CONTAINS_ANY_CS("Have a nice day!", undefined, "nice", "day!"),
		    "case5": CONTAINS_ANY_CS("Have a nice day!", undefined, "had")
		}`, want: `[{"case1":true,"case2":false,"case3":true,"case4":true}]`},
		{q: `SELECT VALUE {
		    "case1": CONTAINS_ALL_CI("Have a nice day!", "have", "nice", "day!"),
		    "case2": CONTAINS_ALL_CI("Have a nice day!", "HAVE", "NICE", "DAY!"),
		    "case3": CONTAINS_ALL_CI("Have a nice day!", "had", "nice", "day!"),
		    "case4": CONTAINS_ALL_CI("Have a nice day!", undefined, "nice", "day!"),
		    "case5": CONTAINS_ALL_CI("Have a nice day!", undefined, "had")
		}`, want: `[{"case1":true,"case2":true,"case3":false,"case5":false}]`},
		{q: `SELECT VALUE {
		    "case1": CONTAINS_ALL_CS("Have a nice day!", "have", "nice", "day!"),
		    "case2": CONTAINS_ALL_CS("Have a nice day!", "HAVE", "NICE", "DAY!"),
		    "case3": CONTAINS_ALL_CS("Have a nice day!", "had", "nice", "day!"),
		    "case4": CONTAINS_ALL_CS("Have a nice day!", undefined, "nice", "day!"),
		    "case5": CONTAINS_ALL_CS("Have a nice day!", undefined, "had")
		}`, want: `[{"case1":false,"case2":false,"case3":false,"case5":false}]`},
		{q: `SELECT VALUE [CONTAINS_ANY_CI(1, "a"), CONTAINS_ALL_CS(null, "a"), CONTAINS_ANY_CS("abc", 1)]`, want: `[[]]`},
		// LASTINDEXOF (documented)
		{q: `SELECT VALUE {
		    "case1": LASTINDEXOF("abcdeabc", "abc"),
		    "case2": LASTINDEXOF("abcdeabc", "abc", 6),
		    "case3": LASTINDEXOF("abcdeabc", "abc", 7),
		    "case4": LASTINDEXOF("abcdeabc", "fg")
		}`, want: `[{"case1":5,"case2":0,"case3":5,"case4":-1}]`},
		// SETDIFFERENCE and SETEQUAL (documented)
		{q: `SELECT VALUE {
		    "case1": SETDIFFERENCE([1, 2, 3], [1, 2, 6, 7]),
		    "case2": SETDIFFERENCE([1, 2, 6, 7], [1, 2, 3]),
		    "case3": SETDIFFERENCE([1, 2, 3, 4], [1, 2, 3, 4, 5, 6]),
		    "case4": SETDIFFERENCE([], [1, 2, 3]),
		    "case5": SETDIFFERENCE([1, 2, 3], []),
		    "case6": SETDIFFERENCE([1, 1, 1, 1], [2, 3, 4])
		}`, want: `[{"case1":[3],"case2":[6,7],"case3":[],"case4":[],"case5":[1,2,3],"case6":[1]}]`},
		{q: `SELECT VALUE {
		    "case1": SETEQUAL([1, 2, 3], [1, 2, 3]),
		    "case2": SETEQUAL([1, 2, 3], [3, 2, 1]),
		    "case3": SETEQUAL([1, 2, 3, 3], [1, 2, 2, 3, 1, 2]),
		    "case4": SETEQUAL([], [1, 2, 3]),
		    "case5": SETEQUAL([1, true, 'abc'], [true, 1, 'abc']),
		    "case6": SETEQUAL([1, 1, 1, 1], [2, 3, 4])
		}`, want: `[{"case1":true,"case2":true,"case3":true,"case4":false,"case5":true,"case6":false}]`},
		{q: `SELECT VALUE [SETEQUAL([{"a":1,"b":2}], [{"b":2,"a":1}]), SETEQUAL([1], ["1"]), SETEQUAL([], [])]`, want: `[[true,false,true]]`},
		{q: `SELECT VALUE [SETDIFFERENCE(1, []), SETEQUAL([], "a")]`, want: `[[]]`},
		// ARRAY_MAX, ARRAY_SUM, ARRAY_AVG, ARRAY_MEDIAN (documented)
		{q: `SELECT VALUE {
		    "case1": ARRAY_MAX([1, 2, 3, 4]),
		    "case2": ARRAY_MAX(['abc', 'ABC', 'aBc', 'AbC']),
		    "case3": ARRAY_MAX([true, false]),
		    "case4": ARRAY_MAX([null, null]),
		    "case5": ARRAY_MAX([12, 'abc', true, false, null, undefined])
		}`, want: `[{"case1":4,"case2":"abc","case3":true,"case4":null,"case5":"abc"}]`},
		{q: `SELECT VALUE {
		    "case1": ARRAY_SUM([1, 2, 3, 4]),
		    "case2": ARRAY_SUM([1, 2, 3, 4, undefined]),
		    "case3": ARRAY_SUM(['abc', 'ABC', 'aBc', 'AbC']),
		    "case4": ARRAY_SUM([12, 'abc', true, false, null, undefined])
		}`, want: `[{"case1":10,"case2":10}]`},
		{q: `SELECT VALUE {
		    "case1": ARRAY_AVG([1, 2, 3, 4]),
		    "case2": ARRAY_AVG([1.0, 2.0, 3.3, 4.7]),
		    "case3": ARRAY_AVG([1, -2.7, 3, -4, undefined]),
		    "case4": ARRAY_AVG(['abc', 'ABC', 'aBc', 'AbC']),
		    "case5": ARRAY_AVG([12, 'abc', true, false, null, undefined])
		}`, want: `[{"case1":2.5,"case2":2.75,"case3":-0.675}]`},
		{q: `SELECT VALUE {
		    "case1": ARRAY_MEDIAN([1, 2, 3, 4]),
		    "case2": ARRAY_MEDIAN([1.0, 2.0, 3.3, 4.7, 7.8]),
		    "case3": ARRAY_MEDIAN([1, -2.7, 3, -4, undefined]),
		    "case4": ARRAY_MEDIAN(['abc', 'ABC', 'aBc', 'AbC']),
		    "case5": ARRAY_MEDIAN([12, 'abc', true, false, null, undefined])
		}`, want: `[{"case1":2.5,"case2":3.3,"case3":-0.8500000000000001}]`},
		{q: `SELECT VALUE [ARRAY_MIN([3, "a", false, null]), ARRAY_MIN([3, 1, 2]), ARRAY_MIN(["b", "a"]), ARRAY_SUM([])]`, want: `[[null,1,"a",0]]`},
		{q: `SELECT VALUE [ARRAY_MAX([]), ARRAY_MIN([[1]]), ARRAY_MAX([{}]), ARRAY_AVG([]), ARRAY_MEDIAN([]), ARRAY_SUM("1"), ARRAY_MAX(1)]`, want: `[[]]`},
		// IS_DATETIME, after the grammar of its documentation
		{q: `SELECT VALUE [IS_DATETIME("2023-03-06"), IS_DATETIME("2023-03-06Z"), IS_DATETIME("2023-03-06 15:29:00Z"), IS_DATETIME("2023-03-06T15:29:00Z"),
		                   IS_DATETIME("2023-03-06T15:29:59"), IS_DATETIME("2023-03-06T15:29:59.9"), IS_DATETIME("2023-03-06T15:29:59.9Z"),
		                   IS_DATETIME("2023-03-06T15:29:59.1234567"), IS_DATETIME("2023-03-06T15:29:59.1234567Z")]`,
			want: `[[true,true,true,true,true,true,true,true,true]]`},
		{q: `SELECT VALUE [IS_DATETIME("2023-03-06X15:29:00"), IS_DATETIME("2023-03-06T15:29"), IS_DATETIME("2023-03-06T15:29:59."), IS_DATETIME("2023-03-06T15:29:59.12345678"),
		                   IS_DATETIME("2023-3-06"), IS_DATETIME("2023-02-30"), IS_DATETIME("2023-03-06T24:00:00"), IS_DATETIME(20230306), IS_DATETIME(undefined), IS_DATETIME("2023-03-06ZZ")]`,
			want: `[[false,false,false,false,false,false,false,false,false,false]]`},
		// DATETIMEFORMAT (documented)
		{q: `SELECT VALUE {
		    "case1": DATETIMEFORMAT("2024-10-10 14:40:20", "yyyyMMdd"),
		    "case2": DATETIMEFORMAT("2024-10-10 14:40:20", "yyyy-MM-dd [HH:mm:ss]"),
		    "case3": DATETIMEFORMAT("2024-10-10 14:40:20", "To\\da\\y i\\s: yyyy-MM-ddTHH:mm:ss.fff"),
		    "case4": DATETIMEFORMAT("2024-10-10 14:40:20", "To\\da\\y i\\s: yyyy-MM-ddTHH:mm:ss.FFF")
		}`, want: `[{"case1":"20241010","case2":"2024-10-10 [14:40:20]","case3":"Today is: 2024-10-10T14:40:20.000","case4":"Today is: 2024-10-10T14:40:20."}]`},
		{q: `SELECT VALUE [DATETIMEFORMAT("2024-01-07T05:04:03.0120000Z", "dddd, MMMM d, yy h:m:s tt 'lit' \"q\" FFFFFFF fffffff K"),
		                   DATETIMEFORMAT("2024-01-07T15:04:03Z", "ddd MMM yyyyy hh t zzz g")]`,
			want: `[["Sunday, January 7, 24 5:4:3 AM lit q 012 0120000 Z","Sun Jan 02024 03 P +00:00 A.D."]]`},
		{q: `SELECT VALUE [DATETIMEFORMAT("2024-01-07", "ffffffff"), DATETIMEFORMAT("2024-01-07", "'open"), DATETIMEFORMAT("2024-01-07", "x\\"), DATETIMEFORMAT("x", "yyyy"), DATETIMEFORMAT("2024-01-07", 1)]`, want: `[[]]`},
		// YEAR, MONTH, DAY
		{q: `SELECT VALUE [YEAR("2016-05-29T08:30:00Z"), MONTH("2016-05-29T08:30:00Z"), DAY("2016-05-29T08:30:00Z"), YEAR("x"), DAY(1)]`, want: `[[2016,5,29]]`},
		// NOW and AGO read the query's clock (testNow is 2026-11-21T21:56:40.1234567Z)
		{q: `SELECT VALUE [NOW(), NOW() = GetCurrentDateTime(), NOW("dd", 10), AGO("mm", 11), AGO("hh", -2), NOW("dd", 1.5), AGO("x", 1), NOW("dd")]`,
			want: `[["2026-11-21T21:56:40.1234567Z",true,"2026-12-01T21:56:40.1234567Z","2025-12-21T21:56:40.1234567Z","2026-11-21T23:56:40.1234567Z"]]`},
	})
}

// TestRegexBounds: patterns too long to compile give undefined; long ones
// work but are not cached.
func TestRegexBounds(t *testing.T) {
	got, err := run(t, `SELECT VALUE [RegexMatch("a", @long), RegexMatch(@s, @mid), RegexMatch(@s, @mid)]`, map[string]any{
		"@long": strings.Repeat("a", maxRegexLen+1),
		"@mid":  strings.Repeat("b", maxRegexCached+1),
		"@s":    "x" + strings.Repeat("b", maxRegexCached+1),
	}, nil)
	require.NoError(t, err)
	assert.Equal(t, `[[true,true]]`, got)
}

// TestStringToCompact: a value parsed from a string is written out anew,
// compact, not as the string held it.
func TestStringToCompact(t *testing.T) {
	got, err := run(t, `SELECT VALUE [StringToArray(" [1,  {\"a\" : [2, 3]}] "), StringToObject("{ \"b\" : [ null ] }")]`, nil, nil)
	if err != nil || got != `[[[1,{"a":[2,3]}],{"b":[null]}]]` {
		t.Errorf("got %s %v", got, err)
	}
}
