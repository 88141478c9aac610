package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/proctor-run/proctor/value"
)

// duplicateKey returns an error naming the first object key that data
// writes twice, at any depth. encoding/json keeps the last of two equal
// keys without a word, so {"dest":"a","dest":"b"} would reach b while a
// reader of the request sees a; a request must say one thing.
func duplicateKey(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dupWalk(dec, "")
}

// exactFields returns an error naming the first key of the object data
// holds that is not one of known, compared exactly: encoding/json matches
// field names without regard to case ("Dest" fills dest).
func exactFields(data []byte, known ...string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil // not an object: decoding says so
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil
		}
		k, _ := kt.(string)
		if !slices.Contains(known, k) {
			return fmt.Errorf("unknown field %q (field names are matched exactly: %s)", k, strings.Join(known, ", "))
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// dupWalk reads one value from dec; path names it in errors.
func dupWalk(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			at := path + "." + k
			if path == "" {
				at = k
			}
			if seen[k] {
				return fmt.Errorf("duplicate key %q", at)
			}
			seen[k] = true
			if err := dupWalk(dec, at); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := dupWalk(dec, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// jsonSize returns about the size of the compact JSON encoding of v, a
// value of the value model, or ok false as soon as it passes max: a reply
// too large to answer with is refused before any of it is copied
// (value.JSONForm) or encoded.
func jsonSize(v any, max int) (n int, ok bool) {
	n = sizeOf(v, 0, max)
	return n, n <= max
}

// sizeOf adds v's encoded size to n, stopping once n passes max.
func sizeOf(v any, n, max int) int {
	if n > max {
		return n
	}
	switch x := v.(type) {
	case nil:
		return n + 4
	case bool:
		return n + 5
	case float64:
		return n + len(strconv.FormatFloat(x, 'g', -1, 64)) + 4 // exponent form is at most a few bytes longer
	case string:
		return n + stringSize(x)
	case []any:
		n += 2
		for _, e := range x {
			if n = sizeOf(e, n+1, max); n > max {
				return n
			}
		}
		return n
	case map[string]any:
		n += 2
		for k, e := range x {
			if n = sizeOf(e, n+stringSize(k)+2, max); n > max {
				return n
			}
		}
		return n
	case map[any]any:
		n += 2
		for k, e := range x {
			ks, _ := value.JSONKey(k)
			if n = sizeOf(e, n+stringSize(ks)+2, max); n > max {
				return n
			}
		}
		return n
	case *value.Error:
		if x == nil {
			return n + 4
		}
		n += 40 + stringSize(string(x.Kind)) + stringSize(x.Message)
		for _, e := range x.Errors {
			if n = sizeOf(e, n+1, max); n > max {
				return n
			}
		}
		if x.Cause != nil {
			n = sizeOf(x.Cause, n+10, max)
		}
		if x.Details != nil {
			n = sizeOf(x.Details, n+12, max)
		}
		return n
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32:
		return n + 24
	}
	// The value model has nothing else; count what it might as too large
	// rather than guess.
	return max + 1
}

// stringSize is about the encoded size of a JSON string: quotes, escapes,
// and six bytes for each byte of invalid UTF-8 (written as \ufffd).
func stringSize(s string) int {
	n := len(s) + 2
	valid := utf8.ValidString(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c >= 0x80 && !valid:
			n += 5
		case c == '"' || c == '\\':
			n++
		}
	}
	return n
}
