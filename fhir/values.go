package fhir

import (
	"encoding/binary"
	"slices"
	"strings"
)

// Values are the values of a resource's parameters (its search values, its references), packed
// in one string: for each parameter that has values, in name order, its name, the number of its
// values, then each value, every string preceded by its length as a uvarint. One string holds no
// pointers, so a cache of many resources costs the garbage collector next to nothing to keep, and a
// resource's values copy, compare and store as one piece.
type Values string

// PackValues packs the values of each parameter of m; parameters without values are left out.
func PackValues(m map[string][]string) Values {
	names := make([]string, 0, len(m))
	n := 0
	for name, vals := range m {
		if len(vals) == 0 {
			continue
		}
		names = append(names, name)
		n += len(name) + 2*binary.MaxVarintLen64
		for _, v := range vals {
			n += len(v) + binary.MaxVarintLen64
		}
	}
	slices.Sort(names)
	b := make([]byte, 0, n)
	for _, name := range names {
		b = appendString(b, name)
		b = binary.AppendUvarint(b, uint64(len(m[name])))
		for _, v := range m[name] {
			b = appendString(b, v)
		}
	}
	return Values(b)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// next reads a length-prefixed string from the start of s and returns it and what follows; ok is
// false when s does not start with one.
func next(s string) (v, rest string, ok bool) {
	n, k := uvarint(s)
	if k <= 0 || uint64(len(s)-k) < n {
		return "", "", false
	}
	return s[k : k+int(n)], s[k+int(n):], true
}

// uvarint decodes a uvarint at the start of s as binary.Uvarint does, without copying s.
func uvarint(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		if c < 0x80 {
			return x | uint64(c)<<shift, i + 1
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, 0
}

// find returns the values of parameter name, still packed (their count read), and their count.
func (v Values) find(name string) (string, uint64) {
	s := string(v)
	for len(s) > 0 {
		p, rest, ok := next(s)
		if !ok {
			return "", 0
		}
		count, k := uvarint(rest)
		if k <= 0 {
			return "", 0
		}
		rest = rest[k:]
		if p == name {
			return rest, count
		}
		for range count {
			if _, rest, ok = next(rest); !ok {
				return "", 0
			}
		}
		if p > name {
			return "", 0 // names are in order
		}
		s = rest
	}
	return "", 0
}

// Each calls fn with each value of parameter name, in order, until fn returns false.
func (v Values) Each(name string, fn func(string) bool) {
	s, count := v.find(name)
	for range count {
		val, rest, ok := next(s)
		if !ok || !fn(val) {
			return
		}
		s = rest
	}
}

// Get returns the values of parameter name (nil when it has none).
func (v Values) Get(name string) []string {
	var out []string
	v.Each(name, func(s string) bool { out = append(out, s); return true })
	return out
}

// Has reports whether parameter name has a value.
func (v Values) Has(name string) bool {
	_, count := v.find(name)
	return count > 0
}

// Contains reports whether value is one of the values of parameter name.
func (v Values) Contains(name, value string) bool {
	found := false
	v.Each(name, func(s string) bool { found = s == value; return !found })
	return found
}

// String returns the values as name=value pairs, for messages and tests.
func (v Values) String() string {
	var b strings.Builder
	s := string(v)
	for len(s) > 0 {
		name, rest, ok := next(s)
		if !ok {
			break
		}
		count, k := uvarint(rest)
		if k <= 0 {
			break
		}
		rest = rest[k:]
		for range count {
			var val string
			if val, rest, ok = next(rest); !ok {
				break
			}
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(name + "=" + val)
		}
		s = rest
	}
	return b.String()
}
