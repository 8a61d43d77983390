package filterpolicy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const loc = "\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: "

// at is the Jackson location suffix for a column of line 1.
func at(col string) string { return loc + col + "]" }

// Policies and errors recorded against AWS by Subscribe (the policies were
// sent with Python's json.dumps spacing; AWS counts columns in its compact
// rewrite, which the expected columns here are).
func TestParseFilterPolicyRecordedErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy string
		want   string // after "Invalid parameter: Attributes Reason: FilterPolicy: "
	}{
		{`{"key": [["value"]]}`, "Match value must be String, number, true, false, or null" + at("10")},
		{`{"key": [{"wrong-operator": true}]}`, "Unrecognized match type wrong-operator" + at("31")},
		{`{"key": [{"suffix": "value", "prefix": "value2"}]}`, "Only one key allowed in match expression" + at("37")},
		{`{"key": []}`, "Empty arrays are not allowed" + at("10")},
		{`{"key": [{"suffix": 100}]}`, "suffix match pattern must be a string" + at("22")},
		{`{"key": [{"suffix": null}]}`, "suffix match pattern must be a string" + at("23")},
		{`{"key": {"suffix": "value"}}`, `"suffix" must be an object or an array` + at("19")},
		{`{"key": [{"suffix": []}]}`, "suffix match pattern must be a string" + at("20")},
		{`{"key": [{"suffix": ["test", "test2"]}]}`, "suffix match pattern must be a string" + at("20")},
		{`{"key": {"suffix": "value", "prefix": "value"}}`, `"suffix" must be an object or an array` + at("19")},
		{`{"key": {"not-an-operator": "value"}}`, `"not-an-operator" must be an object or an array` + at("28")},
		{`{"key": [{"cidr": ["bad-filter"]}]}`, "prefix match pattern must be a string" + at("18")},
		{`{"key": [{"cidr": "bad-filter"}]}`, "Malformed CIDR, one '/' required"},
		{`{"key": [{"cidr": "bad-filter/64"}]}`, "Nonstandard IP address: bad-filter"},
		{`{"key": [{"cidr": "bad-/64filter"}]}`, "Malformed CIDR, mask bits must be an integer"},
		{`{"key": [{"cidr": "xx.11.xx/8"}]}`, "Nonstandard IP address: xx.11.xx"},
		{`{"key": [{"cidr": "xxxx:db8:1234:1a00::/64"}]}`, "Nonstandard IP address: xxxx:db8:1234:1a00::"},
		{`{"key": [{"numeric": []}]}`, "Invalid member in numeric match: ]" + at("22")},
		{`{"key": [{"numeric": ["operator"]}]}`, "Unrecognized numeric range operator: operator" + at("32")},
		{`{"key": [{"numeric": [1, "<="]}]}`, "Invalid member in numeric match: 1" + at("22")},
		{`{"key": [{"numeric": ["=", "000"]}]}`, "Value of equals must be numeric" + at("26")},
		{`{"key": [{"numeric": [">="]}]}`, "Value of >= must be numeric" + at("26")},
		{`{"key": [{"numeric": ["<", 100, ">", 10]}]}`, "Too many elements in numeric expression" + at("30")},
		{`{"key": [{"numeric": [">=", 1, ">", 2]}]}`, "Bad numeric range operator: >" + at("31")},
		{`{"key": [{"numeric": [">", 3, "<", 1]}]}`, "Bottom must be less than top" + at("33")},
		{`{"key": [{"numeric": [">", 20, "<="]}]}`, "Value of <= must be numeric" + at("33")},
		{`{"key": [{"numeric": [">", 20, 30]}]}`, "Bad value in numeric range: 30" + at("30")},
		{`{"key": [{"numeric": [">", 20, "test"]}]}`, "Bad numeric range operator: test" + at("34")},
		{`{"key": [{"numeric": [">", "20", "<", "30"]}]}`, "Value of > must be numeric" + at("26")},
		{`{"key": [{"numeric": [">", 20, "<", "30"]}]}`, "Value of < must be numeric" + at("33")},
		{`{"key": [{"numeric": [">", 20, "<", 30, "<", 50]}]}`, "Too many terms in numeric range expression" + at("36")},
		{`{"key": [{"exists": null}]}`, "exists match pattern must be either true or false." + at("23")},
		{`{"key": [{"exists": "no"}]}`, "exists match pattern must be either true or false." + at("20")},
		{`{"key": [{"anything-but": {"wrong-operator": null}}]}`, "Unsupported anything-but pattern: wrong-operator" + at("47")},
		{`{"key": [{"anything-but": {"suffix": "test"}}]}`, "Unsupported anything-but pattern: suffix" + at("36")},
		{`{"key": [{"anything-but": {"exists": false}}]}`, "Unsupported anything-but pattern: exists" + at("40")},
		{`{"key": [{"anything-but": {"prefix": false}}]}`, "prefix match pattern must be a string" + at("40")},
		{`{"key_a": "value_one"}`, `"key_a" must be an object or an array` + at("11")},
		{`{"key1": ["value1"], "key2": ["value2"], "key3": ["value3"], "key4": ["value4"], "key5": ["value5"], "key6": ["value6"]}`,
			"Filter policy can not have more than 5 keys"},
		{`{"key": [` + strings.Repeat(`"v", `, 150) + `"v"]}`, "Filter policy is too complex"},
		{`{"key1": [` + strings.Repeat(`1, `, 99) + `1], "key2": [` + strings.Repeat(`1, `, 50) + `1]}`, "Filter policy is too complex"},
		{`{"source": ["aws.cloudwatch", "aws.events", "aws.test", "aws.test2"], "$or": [{"metricName": ["CPUUtilization", "ReadLatency", "t1", "t2", "t3", "t4"]}, {"metricType": ["MetricType", "TestType", "TestType2", "TestType3"], "$or": [{"metricId": [1234, 4321, 5678, 9012]}, {"spaceId": [1, 2, 3, 4]}]}]}`,
			"Filter policy is too complex"},
		{`{"invalidjson}`, "failed to parse JSON. Unexpected end-of-input in field name" + at("15")},
	}
	for _, tt := range tests {
		_, err := Parse(tt.policy, ScopeMessageAttributes)
		var perr *Error
		if !errors.As(err, &perr) {
			t.Errorf("%s: err = %v, want a *Error", tt.policy, err)
			continue
		}
		if got, want := perr.SubscribeMessage(), "Invalid parameter: Attributes Reason: FilterPolicy: "+tt.want; got != want {
			t.Errorf("%s:\n got %q\nwant %q", tt.policy, got, want)
		}
	}
}

// SetSubscriptionAttributes words the same errors without "Attributes Reason: ".
func TestParseFilterPolicySetForm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy, scope, want string
	}{
		{`{invalidjson}`, ScopeMessageAttributes, "Invalid parameter: FilterPolicy: failed to parse JSON. Unexpected character ('i' (code 105)): was expecting double-quote to start field name" + at("2")},
		{`invalid-json`, ScopeMessageAttributes, "Invalid parameter: FilterPolicy: failed to parse JSON. Unrecognized token 'invalid': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')" + at("8")},
		{`{"object": {"key": [{"prefix": "auto-"}]}}`, ScopeMessageAttributes, "Invalid parameter: Filter policy scope MessageAttributes does not support nested filter policy"},
		{`{"key_a": {"key_b": {"key_c": ["value_one", "value_two", "value_three", "value_four"]}}, "key_d": {"key_e": ["value_one", "value_two", "value_three"]}, "key_f": ["value_one", "value_two", "value_three"]}`,
			ScopeMessageBody, "Invalid parameter: FilterPolicy: Filter policy is too complex"},
		{`{}`, "RandomValue", "Invalid parameter: FilterPolicyScope: Invalid value [RandomValue]. Please use either MessageBody or MessageAttributes"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.policy, tt.scope)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s:\n got %v\nwant %s", tt.policy, err, tt.want)
		}
	}
}

// Errors the compiler raises that no recording covers; texts and columns
// follow the library and the parser it uses.
func TestParseFilterPolicyErrors(t *testing.T) {
	t.Parallel()
	big := `{"a":["` + strings.Repeat("x", maxPolicyBytes) + `"]}`
	tests := []struct {
		name, policy, want string // want follows "Invalid parameter: "
	}{
		{"not an object", `[1]`, "FilterPolicy: Filter is not an object" + at("2")},
		{"string root", `"x"`, "FilterPolicy: Filter is not an object" + at("2")},
		{"empty nested object", `{"a":{}}`, "FilterPolicy: Empty objects are not allowed" + at("8")},
		{"or not array", `{"$or":"x"}`, "FilterPolicy: It must be an Array followed with $or." + at("9")},
		{"or one branch", `{"$or":[{"a":[1]}]}`, "FilterPolicy: There must have at least 2 Objects in $or relationship." + at("19")},
		{"or non-object", `{"$or":[1,{"a":[1]}]}`, "FilterPolicy: Only JSON object is allowed in array of $or relationship." + at("10")},
		{"reserved in or", `{"$or":[{"prefix":[1]},{"a":[1]}]}`, "FilterPolicy: prefix is Ruler reserved fieldName which cannot be used inside $or." + at("20")},
		{"empty operator", `{"a":[{}]}`, "FilterPolicy: Match expression name not found" + at("9")},
		{"numeric not array", `{"a":[{"numeric":5}]}`, "FilterPolicy: Value of numeric must be an array." + at("19")},
		{"numeric rewritten", `{"a":[{"numeric":[1e1,"<="]}]}`, "FilterPolicy: Invalid member in numeric match: 10.0" + at("23")},
		{"numeric out of range", `{"a":[{"numeric":["<",6e9]}]}`, "FilterPolicy: Value must be between -5.0E9 and 5.0E9, inclusive" + at("29")},
		{"numeric below range", `{"a":[{"numeric":["<",-6e9]}]}`, "FilterPolicy: Bottom must be less than top" + at("30")},
		{"numeric at top", `{"a":[{"numeric":[">=",5e9]}]}`, "FilterPolicy: Bottom must be less than top" + at("30")},
		{"numeric equals too many", `{"a":[{"numeric":["=",1,2]}]}`, "FilterPolicy: Too many elements in numeric expression" + at("26")},
		{"numeric huge equals", `{"a":[{"numeric":["=",1e400]}]}`, "FilterPolicy: Value of equals must be numeric" + at("24")},
		{"exists extra key", `{"a":[{"exists":true,"x":1}]}`, "FilterPolicy: Only one key allowed in match expression" + at("27")},
		{"anything-but empty prefix", `{"a":[{"anything-but":{"prefix":""}}]}`, "FilterPolicy: Null prefix not allowed" + at("35")},
		{"anything-but empty object", `{"a":[{"anything-but":{}}]}`, "FilterPolicy: Anything-But expression name not found" + at("25")},
		{"anything-but bool in list", `{"a":[{"anything-but":[true]}]}`,
			"FilterPolicy: Inside anything but list, start|null|boolean is not supported." + at("28") + at("28")},
		{"anything-but mixed", `{"a":[{"anything-but":["x",1]}]}`,
			"FilterPolicy: Inside anything but list, either all values are number or string, mixed type is not supported" + at("30")},
		{"anything-but empty list", `{"a":[{"anything-but":[]}]}`,
			"FilterPolicy: Inside anything but list, either all values are number or string, mixed type is not supported" + at("25")},
		{"anything-but bool", `{"a":[{"anything-but":true}]}`, "FilterPolicy: Value of anything-but must be an array or single string/number value." + at("27")},
		{"anything-but big number", `{"a":[{"anything-but":6e9}]}`, "FilterPolicy: Value must be between -5.0E9 and 5.0E9, inclusive"},
		{"anything-but big number in list", `{"a":[{"anything-but":[6e9]}]}`, "FilterPolicy: Value must be between -5.0E9 and 5.0E9, inclusive" + at("29")},
		{"anything-but two values", `{"a":[{"anything-but":"x","y":1}]}`, "FilterPolicy: Too many elements in numeric expression" + at("32")},
		{"exactly not string", `{"a":[{"exactly":1}]}`, "FilterPolicy: exact match pattern must be a string" + at("19")},
		{"equals-ignore-case not string", `{"a":[{"equals-ignore-case":1}]}`, "FilterPolicy: equals-ignore-case match pattern must be a string" + at("30")},
		{"ipv4 /32", `{"a":[{"cidr":"10.0.0.0/32"}]}`, "FilterPolicy: IPv4 mask bits must be < 32"},
		{"ipv6 /128", `{"a":[{"cidr":"::/128"}]}`, "FilterPolicy: IPv6 mask bits must be < 128"},
		{"negative mask", `{"a":[{"cidr":"10.0.0.0/-1"}]}`, "FilterPolicy: Malformed CIDR, mask bits must not be negative"},
		{"octet too big", `{"a":[{"cidr":"999.0.0.0/8"}]}`, "FilterPolicy: Invalid IP address: 999.0.0.0"},
		{"bad ipv6", `{"a":[{"cidr":"1::2::3/64"}]}`, "FilterPolicy: Invalid IP address: 1::2::3"},
		{"no address", `{"a":[{"cidr":"/8"}]}`, "FilterPolicy: Nonstandard IP address: "},
		{"two slashes", `{"a":[{"cidr":"10.0.0.0/8/8"}]}`, "FilterPolicy: Malformed CIDR, one '/' required"},
		{"wildcard double star", `{"a":[{"wildcard":"a**b"}]}`, "FilterPolicy: Consecutive wildcard characters at pos 2"},
		{"wildcard bad escape", `{"a":[{"wildcard":"a\\b"}]}`, "FilterPolicy: Invalid escape character at pos 2"},
		{"too large", big, "FilterPolicy: Filter policy is too large"},
		{"nested in or, attribute scope", `{"$or":[{"a":{"b":[1]}},{"c":[1]}]}`, "Filter policy scope MessageAttributes does not support nested filter policy"},
		{"six keys across or", `{"a":[1],"b":[1],"c":[1],"d":[1],"$or":[{"e":[1]},{"f":[1],"g":[1]}]}`, "FilterPolicy: Filter policy can not have more than 5 keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.policy, "")
			if err == nil || err.Error() != "Invalid parameter: "+tt.want {
				t.Errorf("got  %v\nwant Invalid parameter: %s", err, tt.want)
			}
		})
	}
}

// Malformed JSON is reported with the parser's own words and position.
func TestParseFilterPolicyJSONErrors(t *testing.T) {
	t.Parallel()
	const prefix = "Invalid parameter: FilterPolicy: failed to parse JSON. "
	redacted := "[Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: "
	tests := []struct{ policy, want string }{
		{``, "No content to map due to end-of-input" + at("1")},
		{`   `, "No content to map due to end-of-input" + at("4")},
		{`{`, "Unexpected end-of-input: expected close marker for Object (start marker at " + redacted + "1])" + at("2")},
		{`{"a":[1,]}`, "Unexpected character (']' (code 93)): expected a valid value (JSON String, Number, Array, Object or token 'null', 'true' or 'false')" + at("9")},
		{`{"a":[1}`, "Unexpected close marker '}': expected ']' (for Array starting at " + redacted + "6])" + at("8")},
		{`]`, "Unexpected close marker ']': expected '}' (for root starting at " + redacted + "0])" + at("1")},
		{`{"a" 1}`, "Unexpected character ('1' (code 49)): was expecting a colon to separate field name and value" + at("6")},
		{`{"a":1 "b":2}`, "Unexpected character ('\"' (code 34)): was expecting comma to separate Object entries" + at("8")},
		{`{"a":[1],}`, "Unexpected character ('}' (code 125)): was expecting double-quote to start field name" + at("10")},
		{`{"a":tru}`, "Unrecognized token 'tru': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')" + at("9")},
		{`{"a":truex}`, "Unrecognized token 'truex': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')" + at("11")},
		{`{"a":"x\qy"}`, "Unrecognized character escape 'q' (code 113)" + at("9")},
		{`{"a":"\u12G4"}`, "Unexpected character ('G' (code 71)): expected a hex-digit for character escape sequence" + at("11")},
		{`{"a":"x`, "Unexpected end-of-input: was expecting closing quote for a string value" + at("8")},
		{"{\"a\":\"x\ny\"}", "Illegal unquoted character ((CTRL-CHAR, code 10)): has to be escaped using backslash to be included in string value" + at("8")},
		{`{"a":01}`, "Invalid numeric value: Leading zeroes not allowed" + at("7")},
		{`{"a":-x}`, "Unexpected character ('x' (code 120)) in numeric value: expected digit (0-9) to follow minus sign, for valid numeric value" + at("7")},
		{`{"a":1.}`, "Unexpected character ('}' (code 125)) in numeric value: Decimal point not followed by a digit" + at("6")},
		{`{"a":1e}`, "Unexpected character ('}' (code 125)) in numeric value: Exponent indicator not followed by a digit" + at("6")},
		{`{"a":NaN}`, "Non-standard token 'NaN': enable `JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS` to allow" + at("9")},
		{`{"a":'x'}`, "Unexpected character (''' (code 39)): expected a valid value (JSON String, Number, Array, Object or token 'null', 'true' or 'false')" + at("6")},
		{`{"a":[1] /* c */}`, "Unexpected character ('/' (code 47)): maybe a (non-standard) comment? (not recognized as one since Feature 'ALLOW_COMMENTS' not enabled for parser)" + at("10")},
		{"{\"a\":\x01}", "Illegal character ((CTRL-CHAR, code 1)): only regular white space (\\r, \\n, \\t) is allowed between tokens" + at("7")},
		{"{\n  \"a\": x\n}", "Unrecognized token 'x': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')" +
			"\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 2, column: 9]"},
		{strings.Repeat("[", 1001), "Document nesting depth (1001) exceeds the maximum allowed (1000, from `StreamReadConstraints.getMaxNestingDepth()`)" + at("1002")},
		{`{"a":[` + strings.Repeat("1", 1001) + `]}`, "Number value length (1001) exceeds the maximum allowed (1000, from `StreamReadConstraints.getMaxNumberLength()`)" + at("1008")},
		{`{"é":[1}`, "Unexpected close marker '}': expected ']' (for Array starting at " + redacted + "6])" + at("8")},
	}
	for _, tt := range tests {
		_, err := Parse(tt.policy, ScopeMessageBody)
		if err == nil || err.Error() != prefix+tt.want {
			t.Errorf("%q:\n got  %v\n want %s", tt.policy, err, prefix+tt.want)
		}
	}
}

func TestParseFilterPolicyAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, policy, scope string }{
		{"empty", `{}`, ""},
		{"empty with space", " { } ", ScopeMessageBody},
		{"trailing content is ignored", `{"a":["x"]} and more`, ""},
		{"150 combinations with $or", `{"source": ["aws.cloudwatch", "aws.events", "aws.test"], "$or": [{"metricName": ["CPUUtilization", "ReadLatency", "TestVal", "TestVal2", "TestVal3", "TestVal4"]}, {"metricType": ["MetricType", "TestType", "TestType2", "TestType3"], "$or": [{"metricId": [1234, 4321, 5678, 9012]}, {"spaceId": [1, 2, 3, 4, 5, 6, 7]}]}]}`, ""},
		{"documented nested example (72)", `{"key_a": {"key_b": {"key_c": ["value_one", "value_two", "value_three", "value_four"]}}, "key_d": {"key_e": ["value_one", "value_two", "value_three"]}}`, ScopeMessageBody},
		{"every operator", `{"a":["x",1,true,null,{"prefix":"p"},{"suffix":"s"},{"equals-ignore-case":"E"},{"anything-but":["n"]},{"anything-but":"n"},{"anything-but":[1,2]},{"anything-but":3},{"anything-but":{"prefix":"z"}},{"numeric":["=",1]},{"numeric":[">",0,"<=",5]},{"numeric":["<",0]},{"exists":true},{"cidr":"10.0.0.0/8"},{"cidr":"2001:db8::/32"},{"wildcard":"a*b"},{"exactly":"x"}]}`, ""},
		{"or nested in body", `{"detail":{"$or":[{"a":[1]},{"b":[2]}]}}`, ScopeMessageBody},
		{"cidr with trailing slash", `{"a":[{"cidr":"10.0.0.0/8/"}]}`, ""},
		{"big integers", `{"a":[123456789012345678901234567890]}`, ""},
		{"duplicate keys", `{"a":["x"],"a":["y"],"b":[1],"c":[1],"d":[1],"e":[1]}`, ""},
		{"unicode", `{"ключ":["значение","\ud83d\ude00"]}`, ""},
	}
	for _, tt := range tests {
		if _, err := Parse(tt.policy, tt.scope); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func str(v string) Attribute { return Attribute{DataType: "String", StringValue: v} }
func num(v string) Attribute { return Attribute{DataType: "Number", StringValue: v} }
func arr(v string) Attribute {
	return Attribute{DataType: "String.Array", StringValue: v}
}

type attrs = map[string]Attribute

func TestMatchAttributes(t *testing.T) {
	t.Parallel()
	type c = struct {
		attrs attrs
		want  bool
	}
	table := []struct {
		name, policy string
		cases        []c
	}{
		{"exact string", `{"a":["x","y"]}`, []c{
			{attrs{"a": str("x")}, true},
			{attrs{"a": str("y")}, true},
			{attrs{"a": str("z")}, false},
			{attrs{"a": str("X")}, false},
			{attrs{"b": str("x")}, false},
			{nil, false},
			{attrs{"a": arr(`["z","y"]`)}, true},
			{attrs{"a": arr(`["z"]`)}, false},
			{attrs{"a": Attribute{DataType: "String.custom", StringValue: "x"}}, true},
			{attrs{"a": Attribute{DataType: "Binary", BinaryValue: []byte("x")}}, false},
		}},
		{"exact number", `{"a":[100]}`, []c{
			{attrs{"a": num("100")}, true},
			{attrs{"a": num("100.0")}, true},
			{attrs{"a": num("1e2")}, true},
			{attrs{"a": num("101")}, false},
			{attrs{"a": str("100")}, false},
			{attrs{"a": arr(`[1, 100]`)}, true},
			{attrs{"a": arr(`["100"]`)}, false},
			{attrs{"a": Attribute{DataType: "Number.int", StringValue: "100"}}, true},
		}},
		{"string that is a number", `{"a":["100"]}`, []c{
			{attrs{"a": str("100")}, true},
			{attrs{"a": num("100")}, false},
		}},
		{"numeric range", `{"a":[{"numeric":[">",0,"<=",150]}]}`, []c{
			{attrs{"a": num("150")}, true},
			{attrs{"a": num("150.0000001")}, true}, // six decimal places
			{attrs{"a": num("150.000001")}, false},
			{attrs{"a": num("0")}, false},
			{attrs{"a": num("0.000001")}, true},
			{attrs{"a": num("-1")}, false},
			{attrs{"a": str("5")}, false},
			{attrs{"a": num("6000000000")}, false},
		}},
		{"numeric equals", `{"a":[{"numeric":["=",301.5]}]}`, []c{
			{attrs{"a": num("301.5")}, true},
			{attrs{"a": num("3.015e2")}, true},
			{attrs{"a": num("301.6")}, false},
		}},
		{"numeric less", `{"a":[{"numeric":["<",0]}]}`, []c{
			{attrs{"a": num("-0.5")}, true},
			{attrs{"a": num("0")}, false},
		}},
		{"numeric at least", `{"a":[{"numeric":[">=",10,"<",20]}]}`, []c{
			{attrs{"a": num("10")}, true},
			{attrs{"a": num("9.999999")}, false},
			{attrs{"a": num("19.999999")}, true},
			{attrs{"a": num("20")}, false},
		}},
		{"prefix", `{"a":[{"prefix":"bas"}]}`, []c{
			{attrs{"a": str("baseball")}, true},
			{attrs{"a": str("rugby")}, false},
			{attrs{"a": arr(`["rugby","basketball"]`)}, true},
		}},
		{"prefix ignores numbers", `{"a":[{"prefix":"12"}]}`, []c{
			{attrs{"a": num("123")}, false},
			{attrs{"a": str("123")}, true},
		}},
		{"suffix", `{"a":[{"suffix":"ball"}]}`, []c{
			{attrs{"a": str("baseball")}, true},
			{attrs{"a": str("balls")}, false},
		}},
		{"equals-ignore-case", `{"a":[{"equals-ignore-case":"AbC"}]}`, []c{
			{attrs{"a": str("aBc")}, true},
			{attrs{"a": str("abcd")}, false},
		}},
		{"anything-but strings", `{"a":[{"anything-but":["rugby","tennis"]}]}`, []c{
			{attrs{"a": str("baseball")}, true},
			{attrs{"a": str("rugby")}, false},
			{attrs{"a": arr(`["rugby","baseball"]`)}, true},
			{attrs{"a": arr(`["rugby"]`)}, false},
			{attrs{"a": num("5")}, true},
			{nil, false},
		}},
		{"anything-but one string", `{"a":[{"anything-but":"x"}]}`, []c{
			{attrs{"a": str("y")}, true},
			{attrs{"a": str("x")}, false},
		}},
		{"anything-but numbers", `{"a":[{"anything-but":[100,500]}]}`, []c{
			{attrs{"a": num("101")}, true},
			{attrs{"a": num("100.1")}, true},
			{attrs{"a": num("100")}, false},
			{attrs{"a": num("1e2")}, false},
			{attrs{"a": Attribute{DataType: "Number.Array", StringValue: "[100, 50]"}}, true},
			{attrs{"a": str("100")}, true},
		}},
		{"anything-but prefix", `{"a":[{"anything-but":{"prefix":"order-"}}]}`, []c{
			{attrs{"a": str("data-entry")}, true},
			{attrs{"a": str("order_number")}, true},
			{attrs{"a": str("order-cancelled")}, false},
		}},
		{"exists", `{"store":[{"exists":true}]}`, []c{
			{attrs{"store": str("fans")}, true},
			{attrs{"store": num("1")}, true},
			{attrs{"other": str("fans")}, false},
			{attrs{"store": Attribute{DataType: "Binary", BinaryValue: []byte{1}}}, false},
			{attrs{"store": arr(`[]`)}, false},
		}},
		{"not exists", `{"store":[{"exists":false}]}`, []c{
			{attrs{"store": str("fans")}, false},
			{attrs{"other": str("fans")}, true},
			{nil, true},
		}},
		{"cidr v4", `{"ip":[{"cidr":"10.0.0.5/24"}]}`, []c{
			{attrs{"ip": str("10.0.0.0")}, true},
			{attrs{"ip": str("10.0.0.255")}, true},
			{attrs{"ip": str("10.1.1.0")}, false},
			{attrs{"ip": str("not an ip")}, false},
			{attrs{"ip": str("::ffff:10.0.0.1")}, false},
		}},
		{"cidr v6", `{"ip":[{"cidr":"2001:db8::/32"}]}`, []c{
			{attrs{"ip": str("2001:db8:1::1")}, true},
			{attrs{"ip": str("2001:db9::1")}, false},
			{attrs{"ip": str("10.0.0.1")}, false},
		}},
		{"ip literal", `{"ip":["::1"]}`, []c{
			{attrs{"ip": str("::1")}, true},
			{attrs{"ip": str("0:0:0:0:0:0:0:1")}, true},
			{attrs{"ip": str("::2")}, false},
		}},
		{"literals", `{"a":[null,true]}`, []c{
			{attrs{"a": arr(`[null]`)}, true},
			{attrs{"a": arr(`[true]`)}, true},
			{attrs{"a": arr(`[false]`)}, false},
			{attrs{"a": str("true")}, false},
		}},
		{"and across keys", `{"a":["x"],"b":["y"]}`, []c{
			{attrs{"a": str("x"), "b": str("y")}, true},
			{attrs{"a": str("x")}, false},
			{attrs{"a": str("x"), "b": str("z")}, false},
		}},
		{"or across keys", `{"$or":[{"a":["x"]},{"b":["y"]}],"c":[{"exists":true}]}`, []c{
			{attrs{"a": str("x"), "c": str("")}, true},
			{attrs{"b": str("y"), "c": str("")}, true},
			{attrs{"a": str("x")}, false},
			{attrs{"a": str("y"), "b": str("x"), "c": str("")}, false},
		}},
		{"invalid attributes fail the message", `{"a":[{"exists":false}]}`, []c{
			{attrs{"a": arr("not json")}, false},
			{attrs{"b": arr("not json")}, true}, // not an attribute the policy reads
			{attrs{"a": num("abc")}, false},
		}},
		{"wildcard", `{"a":[{"wildcard":"a*c*e"}]}`, []c{
			{attrs{"a": str("abcde")}, true},
			{attrs{"a": str("ace")}, true},
			{attrs{"a": str("acd")}, false},
			{attrs{"a": str("xace")}, false},
		}},
		{"wildcard escapes", `{"a":[{"wildcard":"a\\*\\\\*"}]}`, []c{
			{attrs{"a": str(`a*\zzz`)}, true},
			{attrs{"a": str(`ab\zzz`)}, false},
		}},
		{"exactly", `{"a":[{"exactly":"x"}]}`, []c{
			{attrs{"a": str("x")}, true},
			{attrs{"a": str("y")}, false},
		}},
		{"dotted name", `{"a.b":["x"]}`, []c{
			{attrs{"a.b": str("x")}, true},
		}},
		{"duplicate keys keep the last", `{"a":["x"],"a":["y"]}`, []c{
			{attrs{"a": str("y")}, true},
			{attrs{"a": str("x")}, false},
		}},
		{"empty policy", `{}`, []c{
			{nil, true},
			{attrs{"a": str("x")}, true},
		}},
	}
	for _, tt := range table {
		p, err := Parse(tt.policy, ScopeMessageAttributes)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for i, c := range tt.cases {
			if got := p.MatchAttributes(c.attrs); got != c.want {
				t.Errorf("%s #%d %v: got %v, want %v", tt.name, i, c.attrs, got, c.want)
			}
		}
	}
}

func TestMatchBody(t *testing.T) {
	t.Parallel()
	type c = struct {
		body string
		want bool
	}
	s3 := func(event, key string) string {
		return `{"Records":[{"eventSource":"aws:s3","eventName":"` + event + `","s3":{"bucket":{"name":"b"},"object":{"key":"` + key + `","size":17}}}]}`
	}
	table := []struct {
		name, policy string
		cases        []c
	}{
		{"nested", `{"headers":{"route-to":["queue1"]}}`, []c{
			{`{"headers":{"route-to":["queue1","queue2"]}}`, true},
			{`{"headers":{"route-to":["queue3"]}}`, false},
			{`{"headers":{"route-to":"queue1"}}`, true},
			{`{"route-to":"queue1"}`, false},
		}},
		{"dotted policy key", `{"object.nested":["string.value"]}`, []c{
			{`{"object":{"nested":"string.value"}}`, true},
			{`{"object.nested":"string.value"}`, true},
			{`{"object":{"nested":"test-auto"}}`, false},
		}},
		{"deep dotted key", `{"object.nested.test":["string.value"]}`, []c{
			{`{"object":{"nested":{"test":"string.value"}}}`, true},
			{`{"object.nested.test":"string.value"}`, true},
			{`{"object.nested":{"test":"string.value"}}`, true},
			{`{"object":{"nested.test":"string.value"}}`, true},
			{`{"object":{"nested":{"test":"string.notvalue"}}}`, false},
		}},
		{"arrays of objects", `{"Records":{"s3":{"object":{"key":[{"prefix":"auto-"}]}},"eventName":[{"prefix":"ObjectCreated:"}]}}`, []c{
			{s3("ObjectCreated:Put", "auto-insurance-2314.xml"), true},
			{s3("ObjectRemoved:Delete", "auto-insurance-2314.xml"), false},
			{s3("ObjectCreated:Put", "home-insurance-2314.xml"), false},
			{`{"Records":[{"eventName":"ObjectCreated:Put","s3":{"object":[[{"key":"auto-x","size":17}]]}},{"eventName":"ObjectRemoved:Delete","s3":{"object":{"key":"home-x"}}}]}`, true},
		}},
		{"or nested in body", `{"$or":[{"metricName":["CPUUtilization","ReadLatency"]},{"namespace":["AWS/EC2","AWS/ES"]}],"detail":{"scope":["Service"],"$or":[{"source":["aws.cloudwatch"]},{"type":["CloudWatch Alarm State Change"]}]}}`, []c{
			{`{"metricName":"CPUUtilization","detail":{"scope":"aws.cloudwatch","type":"CloudWatch Alarm State Change"}}`, false},
			{`{"metricName":"CPUUtilization","detail":{"scope":"Service","type":"CPUUtilization"}}`, false},
			{`{"metricName":"CPUUtilization","detail":{"type":"CloudWatch Alarm State Change"}}`, false},
			{`{"metricName":"CPUUtilization","detail":{"scope":"Service"}}`, false},
			{`{"metricName":"CPUUtilization","scope":"Service"}`, false},
			{`{"metricName":"AWS/EC2","detail":{"scope":"Service","type":"CloudWatch Alarm State Change"}}`, false},
			{`{"namespace":"CPUUtilization","detail":{"scope":"Service","type":"CloudWatch Alarm State Change"}}`, false},
			{`{"metricName":"CPUUtilization","detail":{"scope":"Service","source":"aws.cloudwatch"}}`, true},
			{`{"metricName":"ReadLatency","detail":{"scope":"Service","source":"aws.cloudwatch"}}`, true},
			{`{"namespace":"AWS/EC2","detail":{"scope":"Service","source":"aws.cloudwatch"}}`, true},
			{`{"namespace":"AWS/ES","detail":{"scope":"Service","source":"aws.cloudwatch"}}`, true},
			{`{"metricName":"CPUUtilization","detail":{"scope":"Service","type":"CloudWatch Alarm State Change"}}`, true},
		}},
		{"empty string beside an empty array", `{"detail":{"eventVersion":[""]}}`, []c{
			{`{"version":"0","resources":[],"detail":{"eventVersion":"","responseElements":null}}`, true},
		}},
		{"types", `{"price":[100],"flag":[true],"none":[null]}`, []c{
			{`{"price":100,"flag":true,"none":null}`, true},
			{`{"price":1E2,"flag":true,"none":null}`, true},
			{`{"price":"100","flag":true,"none":null}`, false},
			{`{"price":100,"flag":"true","none":null}`, false},
			{`{"price":100,"flag":true,"none":"null"}`, false},
			{`{"price":100,"flag":true}`, false},
		}},
		{"numbers beyond the comparable range match by literal", `{"n":[12345678901234567890]}`, []c{
			{`{"n":12345678901234567890}`, true},
			{`{"n":12345678901234567891}`, false},
		}},
		{"exists looks at values", `{"a":[{"exists":false}],"b":[{"exists":true}]}`, []c{
			{`{"a":{"x":1},"b":0}`, true},
			{`{"a":[],"b":[0]}`, true},
			{`{"a":null,"b":0}`, false},
			{`{"b":{}}`, false},
		}},
		{"not a JSON object", `{"a":[{"exists":false}]}`, []c{
			{`not json`, false},
			{`[{"a":1}]`, false},
			{``, false},
			{`{}`, true},
			{`{"b":1} trailing`, true},
		}},
		{"empty policy", `{}`, []c{
			{`not json`, true},
		}},
		{"escaped strings", `{"a":["x\"y\u00e9"]}`, []c{
			{`{"a":"x\"y\u00e9"}`, true},
			{`{"a":"x\"yé"}`, true},
		}},
		{"empty key", `{"":{"a":[1]}}`, []c{
			{`{"":{"a":1}}`, true},
			{`{"a":1}`, false},
		}},
	}
	for _, tt := range table {
		p, err := Parse(tt.policy, ScopeMessageBody)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for i, c := range tt.cases {
			if got := p.MatchBody(c.body); got != c.want {
				t.Errorf("%s #%d %s: got %v, want %v", tt.name, i, c.body, got, c.want)
			}
		}
	}
}

func TestMatchByScope(t *testing.T) {
	t.Parallel()
	var nilPolicy *Policy
	if !nilPolicy.Match("x", nil) || nilPolicy.Scope() != ScopeMessageAttributes {
		t.Error("a nil policy must let everything through")
	}
	body, err := Parse(`{"a":["x"]}`, ScopeMessageBody)
	if err != nil {
		t.Fatal(err)
	}
	if !body.Match(`{"a":"x"}`, nil) || body.Match(`{"a":"y"}`, attrs{"a": str("x")}) {
		t.Error("a MessageBody policy must look at the body")
	}
	att, err := Parse(`{"a":["x"]}`, "")
	if err != nil {
		t.Fatal(err)
	}
	if att.Scope() != ScopeMessageAttributes || !att.Match(`{"a":"y"}`, attrs{"a": str("x")}) || att.Match(`{"a":"x"}`, nil) {
		t.Error("a MessageAttributes policy must look at the attributes")
	}
}

func TestJavaDouble(t *testing.T) {
	t.Parallel()
	tests := map[float64]string{
		0: "0.0", 1: "1.0", 10: "10.0", 0.001: "0.001", 0.0001: "1.0E-4", 1234567: "1234567.0",
		1e7: "1.0E7", 1.5e10: "1.5E10", -2.5e-5: "-2.5E-5", 301.5: "301.5", 6e9: "6.0E9",
	}
	for f, want := range tests {
		if got := javaDouble(f); got != want {
			t.Errorf("javaDouble(%v) = %s, want %s", f, got, want)
		}
	}
}

func FuzzParseFilterPolicy(f *testing.F) {
	for _, s := range []string{
		`{"a":["x",1,true,null,{"prefix":"p"},{"numeric":[">",0,"<=",5]},{"anything-but":[1,2]},{"cidr":"10.0.0.0/8"}]}`,
		`{"$or":[{"a":{"b":[1]}},{"c":[{"exists":false}]}]}`,
		`{"a":[{"anything-but":{"prefix":"x"}}],"b":[{"wildcard":"a*\\*"}]}`,
		`{"a":[1e400, -0, 1.50, "\ud800"]}`, `{`, `[`, `{"a":[{"numeric":["=",1e1,2]}]}`, "{\"\u00e9\":[\"\U0001F600\"]}",
	} {
		f.Add(s, false, `{"a":"x","b":{"c":[1,2]}}`)
		f.Add(s, true, `not json`)
	}
	f.Fuzz(func(t *testing.T, raw string, body bool, msg string) {
		scope := ScopeMessageAttributes
		if body {
			scope = ScopeMessageBody
		}
		p, err := Parse(raw, scope)
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) || !strings.HasPrefix(err.Error(), "Invalid parameter: ") {
				t.Fatalf("unexpected error %T %v", err, err)
			}
			return
		}
		p.MatchBody(msg)
		p.MatchAttributes(attrs{"a": str(msg), "b": arr(msg), "c": num(msg), "b.c": arr(msg)})
	})
}

func FuzzMatch(f *testing.F) {
	policies := []string{
		`{"a":["x",1,true,null,{"prefix":"p"},{"suffix":"s"},{"equals-ignore-case":"E"}]}`,
		`{"a":[{"anything-but":["n"]},{"anything-but":[1,2]},{"anything-but":{"prefix":"z"}}]}`,
		`{"a":[{"numeric":[">",0,"<=",5]},{"cidr":"10.0.0.0/8"},{"cidr":"2001:db8::/32"},{"wildcard":"a*b*"}]}`,
		`{"$or":[{"a":{"b":[{"exists":true}]}},{"c":[{"exists":false}]}],"d.e":["::1"]}`,
	}
	compiled := make([]*Policy, len(policies))
	for i, s := range policies {
		p, err := Parse(s, ScopeMessageBody)
		if err != nil {
			f.Fatal(err)
		}
		compiled[i] = p
	}
	f.Add(`{"a":{"b":[1,{"c":2}]},"d":{"e":"0::1"}}`, "10.1.2.3")
	f.Add(`{"a":[["x"]],"c":null}`, `["a",1,null,{"b":2}]`)
	f.Add(`{"a":1e400}`, "1e400")
	f.Fuzz(func(t *testing.T, body, value string) {
		for _, p := range compiled {
			p.MatchBody(body)
			p.MatchAttributes(attrs{"a": str(value), "c": num(value), "d.e": arr(value),
				"b": {DataType: "Number.Array", StringValue: value}})
		}
	})
}

// The reader accepts what encoding/json accepts, within Jackson's limits,
// and its compact rewrite reads back to the same tree.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,-0,1e400,"x\u0000\"",true,false,null,{}]}`, `[]`, `"\ud83d\ude00"`, `0`, `{"a":{"a":1},"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseJSON(s, true)
		if err != nil {
			if json.Valid([]byte(s)) && !strings.Contains(err.msg, "exceeds the maximum") {
				t.Fatalf("rejected valid JSON %q: %v", s, err)
			}
			return
		}
		out := appendCompact(nil, n)
		if !json.Valid(out) {
			t.Fatalf("rewrite of %q is not JSON: %s", s, out)
		}
		n2, err := parseJSON(string(out), true)
		if err != nil {
			t.Fatalf("rewrite %s does not read back: %v", out, err)
		}
		if out2 := appendCompact(nil, n2); string(out2) != string(out) {
			t.Fatalf("rewrite is not stable: %s then %s", out, out2)
		}
	})
}

func TestFilterEvaluateReasons(t *testing.T) {
	t.Parallel()
	str := func(v string) Attribute { return Attribute{DataType: "String", StringValue: v} }
	for _, c := range []struct {
		policy, scope string
		body          string
		attrs         map[string]Attribute
		want          Result
	}{
		{`{"a":["x"]}`, "", "", map[string]Attribute{"a": str("x")}, Pass},
		{`{"a":["x"]}`, "", "", map[string]Attribute{"a": str("y")}, NoMatch},
		{`{"a":["x"]}`, "", "", map[string]Attribute{"b": str("x")}, NoMatch},
		{`{"a":["x"]}`, "", "", nil, NoAttributes},
		{`{"a":[{"exists":false}]}`, "", "", nil, Pass},
		{`{"a":["x"]}`, "", "", map[string]Attribute{"a": {DataType: "String.Array", StringValue: "x"}}, InvalidAttributes},
		{`{"a":[5]}`, "", "", map[string]Attribute{"a": {DataType: "Number.Array", StringValue: "5"}}, InvalidAttributes},
		{`{"a":[5]}`, "", "", map[string]Attribute{"a": {DataType: "Number", StringValue: "five"}}, InvalidAttributes},
		// An attribute the policy does not read is never invalid.
		{`{"a":["x"]}`, "", "", map[string]Attribute{"a": str("x"), "b": {DataType: "Number", StringValue: "five"}}, Pass},
		{`{"a":["x"]}`, ScopeMessageBody, `{"a":"x"}`, nil, Pass},
		{`{"a":["x"]}`, ScopeMessageBody, `{"a":"y"}`, nil, NoMatch},
		{`{"a":["x"]}`, ScopeMessageBody, `not json`, nil, InvalidBody},
		{`{"a":["x"]}`, ScopeMessageBody, `["a"]`, nil, InvalidBody},
		{`{}`, ScopeMessageBody, `not json`, nil, Pass},
	} {
		p, err := Parse(c.policy, c.scope)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Evaluate(c.body, c.attrs); got != c.want {
			t.Errorf("%s (%s) on %q %v: %d, want %d", c.policy, c.scope, c.body, c.attrs, got, c.want)
		}
		if p.Match(c.body, c.attrs) != (c.want == Pass) {
			t.Errorf("%s: Match disagrees with Evaluate", c.policy)
		}
	}
}
