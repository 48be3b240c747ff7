package demo

import "strconv"

// Public IDs and external identifiers. Every generator of identifiers is a bijection of a counter, so
// values are unique without keeping a set of those already used.

const mask40 = 1<<40 - 1

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// opaque maps i to a 40-bit number, one to one for i below 2^40: an offset, then multiplications by
// odd numbers and xor-shifts, each of which is invertible modulo 2^40.
func opaque(i uint64, salt uint64) uint64 {
	x := (i + salt) & mask40
	x = (x * 0x9E3779B97F) & mask40
	x ^= x >> 17
	x = (x * 0xC2B2AE3D27) & mask40
	x ^= x >> 19
	return x
}

// publicID returns prefix followed by eight base-32 characters standing for i.
func publicID(prefix string, i int, salt uint64) string {
	x := opaque(uint64(i), salt)
	var b [8]byte
	for k := 7; k >= 0; k-- {
		b[k] = crockford[x&31]
		x >>= 5
	}
	return prefix + string(b[:])
}

// nineDigits returns a nine-digit number for counter i, one to one for i below 10^9.
func nineDigits(i int, salt uint64) string {
	const m = 1_000_000_000
	x := (uint64(i)*618_033_989 + salt%m) % m
	s := strconv.FormatUint(x, 10)
	for len(s) < 9 {
		s = "0" + s
	}
	return s
}

// luhnDigit returns the Luhn check digit to append to p.
func luhnDigit(p string) byte {
	sum := 0
	for i := 0; i < len(p); i++ {
		d := int(p[len(p)-1-i] - '0')
		if i%2 == 0 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return byte('0' + (10-sum%10)%10)
}

// luhnValid reports whether the digits pass the Luhn check.
func luhnValid(s string) bool {
	return len(s) > 1 && luhnDigit(s[:len(s)-1]) == s[len(s)-1]
}

// hpi returns a 16-digit Healthcare Provider Identifier: the prefix (800362 for organisations,
// 800361 for individuals), nine digits and a Luhn check digit.
func hpi(prefix string, i int, salt uint64) string {
	p := prefix + nineDigits(i, salt)
	return p + string(luhnDigit(p))
}

var abnWeights = [11]int{10, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19}

// abnValid reports whether s is an ABN: 11 digits whose weighted sum, after one is taken from the
// first digit, is a multiple of 89.
func abnValid(s string) bool {
	if len(s) != 11 {
		return false
	}
	sum := 0
	for i := range 11 {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
		d := int(s[i] - '0')
		if i == 0 {
			d--
		}
		sum += d * abnWeights[i]
	}
	return sum%89 == 0
}

// abnFor returns the ABN ending in the nine digits body: the two leading digits are the check digits.
// The first two digits contribute 10*d1 + d2 - 10, which takes every value 0 to 89 for 10..99, so a
// valid pair always exists.
func abnFor(body string) string {
	for d := 10; d <= 99; d++ {
		s := strconv.Itoa(d) + body
		if abnValid(s) {
			return s
		}
	}
	panic("demo: no ABN check digits for " + body) // unreachable, see above
}

// acnFor returns an ACN: eight digits of the body and a check digit.
func acnFor(body string) string {
	b := body[:8]
	sum := 0
	for i := range 8 {
		sum += int(b[i]-'0') * (8 - i)
	}
	return b + strconv.Itoa((10-sum%10)%10)
}

// acnValid reports whether s is a valid ACN.
func acnValid(s string) bool {
	return len(s) == 9 && acnFor(s) == s
}

// nzbnFor returns a New Zealand Business Number: a GS1 number of 13 digits starting 9429 with a GS1
// check digit.
func nzbnFor(body string) string {
	p := "9429" + body[1:]
	return p + string(gs1Check(p))
}

// gs1Check returns the GS1 check digit of the digits p: weights 3 and 1 alternate from the rightmost
// digit, which has weight 3.
func gs1Check(p string) byte {
	sum := 0
	for i := range len(p) {
		w := 1
		if (len(p)-i)%2 == 1 {
			w = 3
		}
		sum += int(p[i]-'0') * w
	}
	return byte('0' + (10-sum%10)%10)
}

// ahpraFor returns an Ahpra registration number: the profession's three letters and ten digits.
func ahpraFor(prefix string, i int, salt uint64) string {
	return prefix + "0" + nineDigits(i, salt)
}
