package webhook

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// TestOnlyPublicAddressesPass checks the connect-time rule on every kind of address a webhook must
// never reach, and on public ones.
func TestOnlyPublicAddressesPass(t *testing.T) {
	for _, c := range []struct {
		ip     string
		public bool
	}{
		{"127.0.0.1", false}, {"127.1.2.3", false}, {"::1", false}, {"0.0.0.0", false}, {"::", false},
		{"10.0.0.1", false}, {"172.16.5.4", false}, {"192.168.1.1", false}, {"fd12::1", false},
		{"169.254.169.254", false}, {"fe80::1", false}, {"fd00:ec2::254", false},
		{"100.64.0.1", false}, {"100.100.100.200", false},
		{"::ffff:127.0.0.1", false}, {"::ffff:10.0.0.1", false}, {"64:ff9b::a00:1", false}, {"2002:7f00:1::", false},
		{"224.0.0.1", false}, {"255.255.255.255", false}, {"192.0.2.1", false}, {"2001:db8::1", false},
		{"8.8.8.8", true}, {"1.1.1.1", true}, {"::ffff:8.8.8.8", true}, {"2606:4700:4700::1111", true}, {"100.128.0.1", true},
	} {
		if got := publicAddr(netip.MustParseAddr(c.ip)); got != c.public {
			t.Errorf("publicAddr(%s) = %t, want %t", c.ip, got, c.public)
		}
		g := &guard{}
		err := g.control("tcp", net.JoinHostPort(c.ip, "443"), nil)
		if (err == nil) != c.public {
			t.Errorf("dialling %s: %v", c.ip, err)
		}
	}
	if err := (&guard{allowPrivate: true}).control("tcp", "127.0.0.1:443", nil); err != nil {
		t.Errorf("the test switch: %v", err)
	}
}

// TestRegistrationRefusesWhatIsNotPublic checks an endpoint's URL at registration, names resolved by
// a resolver that answers every name with a loopback address (as a rebinding name would).
func TestRegistrationRefusesWhatIsNotPublic(t *testing.T) {
	loopback := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		return nil, &net.DNSError{Err: "no such host", IsNotFound: true}
	}}
	g := &guard{resolver: loopback}
	for raw, want := range map[string]string{
		"http://example.org/hook":                            "https",
		"https://user:pw@example.org/hook":                   "credentials",
		"https://127.0.0.1/hook":                             "not a public",
		"https://[::1]/hook":                                 "not a public",
		"https://169.254.169.254/latest":                     "not a public",
		"https://10.1.2.3:8443/hook":                         "not a public",
		"https://localhost/hook":                             "not a public internet name",
		"https://metadata.google.internal":                   "not a public internet name",
		"https://intranet/hook":                              "not a public internet name",
		"https://nowhere.example/hook":                       "does not resolve",
		"/relative":                                          "absolute",
		"https://example.org/" + strings.Repeat("a", maxURL): "at most",
	} {
		if _, err := g.checkURL(context.Background(), raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60s: %v, want an error saying %q", raw, err, want)
		}
	}
	if u, err := g.checkURL(context.Background(), "https://8.8.8.8/hook?x=1"); err != nil || u != "https://8.8.8.8/hook?x=1" {
		t.Errorf("a public address: %q %v", u, err)
	}
}
