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
	if err := allowing(t, "127.0.0.0/8", nil).control("tcp", "127.0.0.1:443", nil); err != nil {
		t.Errorf("with 127.0.0.0/8 allowed: %v", err)
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

// TestSpecialPurposeRangesAreRefused reads like the IANA IPv4 and IPv6 special-purpose address
// registries, and the ranges that embed an IPv4 address: the first, a middle and the last address of
// each entry not globally reachable are refused at registration and at connect time, and an address
// just past a range's end that is public passes.
func TestSpecialPurposeRangesAreRefused(t *testing.T) {
	for _, c := range []struct {
		prefix, name string
		next         string // the first address past the range, when it is public ("" when not)
	}{
		// IPv4 Special-Purpose Address Registry (RFC 6890 and later).
		{"0.0.0.0/8", "this network", "1.0.0.0"},
		{"10.0.0.0/8", "private use", "11.0.0.0"},
		{"100.64.0.0/10", "shared address space", "100.128.0.0"},
		{"127.0.0.0/8", "loopback", "128.0.0.0"},
		{"169.254.0.0/16", "link local", "169.255.0.0"},
		{"172.16.0.0/12", "private use", "172.32.0.0"},
		{"192.0.0.0/24", "IETF protocol assignments", "192.0.1.0"},
		{"192.0.2.0/24", "documentation", "192.0.3.0"},
		{"192.31.196.0/24", "AS112-v4", "192.31.197.0"},
		{"192.52.193.0/24", "AMT", "192.52.194.0"},
		{"192.88.99.0/24", "deprecated 6to4 relay anycast", "192.88.100.0"},
		{"192.168.0.0/16", "private use", "192.169.0.0"},
		{"192.175.48.0/24", "direct delegation AS112 service", "192.175.49.0"},
		{"198.18.0.0/15", "benchmarking", "198.20.0.0"},
		{"198.51.100.0/24", "documentation", "198.51.101.0"},
		{"203.0.113.0/24", "documentation", "203.0.114.0"},
		{"224.0.0.0/4", "multicast", ""},
		{"240.0.0.0/4", "reserved", ""},
		{"255.255.255.255/32", "limited broadcast", ""},
		// IPv6 Special-Purpose Address Registry (RFC 6890 and later).
		{"::1/128", "loopback address", ""},
		{"::/128", "unspecified address", ""},
		{"64:ff9b::/96", "IPv4-IPv6 translation", ""},
		{"64:ff9b:1::/48", "local-use IPv4/IPv6 translation", ""},
		{"100::/64", "discard-only address block", ""},
		{"100:0:0:1::/64", "dummy IPv6 prefix", ""},
		{"2001::/23", "IETF protocol assignments", "2001:200::"},
		{"2001::/32", "Teredo", ""},
		{"2001:2::/48", "benchmarking", ""},
		{"2001:db8::/32", "documentation", "2001:db9::"},
		{"2002::/16", "6to4", "2003::"},
		{"2620:4f:8000::/48", "direct delegation AS112 service", ""},
		{"3fff::/20", "documentation", ""},
		{"5f00::/16", "segment routing SIDs", ""},
		{"fc00::/7", "unique-local", ""},
		{"fe80::/10", "link-local unicast", ""},
		// Deprecated ranges that embed an IPv4 address, and the rest of IPv6's own.
		{"::/96", "IPv4-compatible", ""},
		{"::ffff:0:0:0/96", "IPv4-translated", ""},
		{"fec0::/10", "site-local", ""},
		{"ff00::/8", "multicast", ""},
	} {
		p := netip.MustParsePrefix(c.prefix)
		first := p.Addr()
		last := lastOf(p)
		middle := first
		for i := 0; i < 12 && middle.Next().IsValid() && p.Contains(middle.Next()); i++ {
			middle = middle.Next()
		}
		for _, ip := range []netip.Addr{first, middle, last} {
			if publicAddr(ip) {
				t.Errorf("%s (%s): %s passes", c.prefix, c.name, ip)
			}
			if err := (&guard{}).control("tcp", net.JoinHostPort(ip.String(), "443"), nil); err == nil {
				t.Errorf("%s (%s): dialling %s passes", c.prefix, c.name, ip)
			}
			u := "https://" + net.JoinHostPort(ip.String(), "443") + "/hook"
			if _, err := (&guard{}).checkURL(context.Background(), u); err == nil || !strings.Contains(err.Error(), "not a public") {
				t.Errorf("%s (%s): registering %s: %v", c.prefix, c.name, u, err)
			}
		}
		if c.next != "" && !publicAddr(netip.MustParseAddr(c.next)) {
			t.Errorf("%s (%s): %s, just past it, is refused", c.prefix, c.name, c.next)
		}
	}
	// Loopback, private and metadata addresses written in each form that embeds an IPv4 address.
	for _, ip := range []string{
		"::7f00:1", "::a9fe:a9fe", "::a00:1", "::ffff:7f00:1", "::ffff:169.254.169.254", "::ffff:0:7f00:1",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a00:1", "2002:7f00:1::", "2002:a9fe:a9fe::1",
		"2001:0:4136:e378:8000:63bf:80ff:fffe", "2001::a9fe:a9fe",
	} {
		if publicAddr(netip.MustParseAddr(ip)) {
			t.Errorf("%s passes", ip)
		}
		if _, err := (&guard{}).checkURL(context.Background(), "https://["+ip+"]/hook"); err == nil {
			t.Errorf("registering [%s] passes", ip)
		}
	}
}

// lastOf returns the last address of a prefix.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
