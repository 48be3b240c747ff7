package primary

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// TestValidNumberIsIsValidNumber: validNumber answers as phonenumbers.IsValidNumber for numbers read
// in the main region of a calling code shared by several (AU for +61, US for +1, GB for +44), in
// regions that share it without being its main one (CX, CC, CA, JE), and in a region alone on its
// code (NZ): the example numbers of every type, and random digits in national and international
// form, valid and not.
func TestValidNumberIsIsValidNumber(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	types := []phonenumbers.PhoneNumberType{phonenumbers.FIXED_LINE, phonenumbers.MOBILE, phonenumbers.TOLL_FREE,
		phonenumbers.PREMIUM_RATE, phonenumbers.SHARED_COST, phonenumbers.VOIP, phonenumbers.PERSONAL_NUMBER,
		phonenumbers.PAGER, phonenumbers.UAN, phonenumbers.VOICEMAIL}
	valid := 0
	for _, region := range []string{"AU", "CX", "CC", "NZ", "US", "CA", "GB", "JE"} {
		var inputs []string
		for _, typ := range types {
			if ex := phonenumbers.GetExampleNumberForType(region, typ); ex != nil {
				inputs = append(inputs, phonenumbers.Format(ex, phonenumbers.NATIONAL), phonenumbers.Format(ex, phonenumbers.E164))
			}
		}
		for range 20000 {
			var b strings.Builder
			switch rng.IntN(3) {
			case 0:
				b.WriteString("0")
			case 1:
				b.WriteString("+")
				b.WriteString([]string{"61", "64", "1", "44", "672"}[rng.IntN(5)])
			}
			for range 6 + rng.IntN(6) {
				b.WriteByte(byte('0' + rng.IntN(10)))
			}
			inputs = append(inputs, b.String())
		}
		for _, in := range inputs {
			n, err := phonenumbers.Parse(in, region)
			if err != nil {
				continue
			}
			want := phonenumbers.IsValidNumber(n)
			if got := validNumber(n, region); got != want {
				t.Errorf("%s read in %s: validNumber %v, IsValidNumber %v", in, region, got, want)
			}
			if want {
				valid++
			}
		}
	}
	if valid < 1000 {
		t.Errorf("only %d of the numbers tried were valid: the test tries too few", valid)
	}
}
