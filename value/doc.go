// Package value defines Proctor's value model: the values that may cross a
// process boundary, on one node or to another node (Encode and Decode are
// their wire form, carried in remote/wire's envelope), and the error values
// that carry a kind callers can branch on.
//
// A Value is one of:
//
//	nil, bool, float64, string,
//	[]any              an array (a Lua sequence 1..n),
//	map[string]any     a map with string keys,
//	map[any]any        a map with mixed keys (string, float64 or bool),
//	Record             a map with string keys given by its fields (see Record;
//	                   a BoxedRecord also gives its keys boxed),
//	*Error             an error value.
//
// Integers of any Go integer type are accepted by Check and Copy and are
// normalised to float64, the number type of Lua. Values built by Go code
// that stay within one node are passed by reference; the Lua host copies at
// every process boundary, so no two Lua states ever share a table. A value
// sent to another node is encoded and decoded there, a copy by
// construction.
package value
