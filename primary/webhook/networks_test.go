package webhook

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// allowing returns the guard of a service configured as --webhook-allow-networks list configures
// it, resolving names with r (nil: the system's resolver).
func allowing(t *testing.T, list string, r *net.Resolver) *guard {
	t.Helper()
	networks, err := ParseNetworks(list)
	if err != nil {
		t.Fatalf("ParseNetworks(%q): %v", list, err)
	}
	s, err := New(Config{AllowNetworks: networks, SealKey: bytes.Repeat([]byte{9}, 32), Resolver: r})
	if err != nil {
		t.Fatalf("New with networks %q: %v", list, err)
	}
	return s.guard
}

// reaches reports whether g lets an endpoint on ip be registered and connected to, and fails the
// test when the two checks disagree.
func reaches(t *testing.T, g *guard, ip netip.Addr) bool {
	t.Helper()
	dial := g.control("tcp", net.JoinHostPort(ip.String(), "443"), nil) == nil
	u := "https://" + net.JoinHostPort(ip.String(), "443") + "/hook"
	_, err := g.checkURL(context.Background(), u)
	if register := err == nil; register != dial {
		t.Errorf("%s: registration passes %t (%v), connecting passes %t", ip, register, err, dial)
	}
	return dial
}

// TestAllowedNetworksAdmitExactlyTheirAddresses checks what each allowed network lets through at
// registration and at connect time, and what it leaves refused.
func TestAllowedNetworksAdmitExactlyTheirAddresses(t *testing.T) {
	for _, c := range []struct {
		name, networks  string
		admits, refuses []string
	}{
		{"none allowed: public addresses only", "",
			[]string{"8.8.8.8", "2606:4700:4700::1111"},
			[]string{"127.0.0.1", "::1", "10.0.0.5", "192.168.1.1", "fd12::1", "169.254.169.254"}},
		{"10.0.0.0/8 admits 10.x and nothing else that is private", "10.0.0.0/8",
			[]string{"10.0.0.5", "10.0.0.0", "10.255.255.255", "::ffff:10.0.0.5", "8.8.8.8"},
			[]string{"172.16.0.1", "192.168.1.1", "127.0.0.1", "100.64.0.1", "169.254.1.1", "fd12::1", "::a00:5", "64:ff9b::a00:5", "2002:a00:5::1"}},
		{"a narrower network", "10.1.2.0/24",
			[]string{"10.1.2.3", "10.1.2.255"},
			[]string{"10.1.3.0", "10.1.1.255", "10.0.0.5"}},
		{"127.0.0.0/8 admits IPv4 loopback only", "127.0.0.0/8",
			[]string{"127.0.0.1", "127.255.255.254", "::ffff:127.0.0.1"},
			[]string{"::1", "0.0.0.0", "::", "10.0.0.5", "::7f00:1", "64:ff9b::7f00:1"}},
		{"::1/128 admits IPv6 loopback only", "::1/128",
			[]string{"::1"},
			[]string{"127.0.0.1"}},
		{"a network written as IPv4-mapped is its IPv4 network", "::ffff:10.0.0.0/104",
			[]string{"10.1.2.3", "::ffff:10.1.2.3"},
			[]string{"172.16.0.1"}},
		{"every IPv4 address still leaves loopback and metadata refused", "0.0.0.0/0",
			[]string{"10.0.0.5", "172.16.0.1", "192.168.1.1", "169.254.1.1", "100.64.0.1", "198.18.0.1"},
			[]string{"127.0.0.1", "0.0.0.0", "169.254.169.254", "169.254.170.2", "169.254.170.23", "100.100.100.200",
				"168.63.129.16", "192.0.0.192", "224.0.0.1", "255.255.255.255", "::ffff:169.254.169.254", "fd12::1"}},
		{"every IPv6 address still leaves loopback, metadata and embedded IPv4 refused", "::/0",
			[]string{"fd12::1", "fc00::5", "2001:db8::1", "100::1"},
			[]string{"::1", "::", "fd00:ec2::254", "fd00:ec2::23", "::a00:5", "::ffff:0:a00:5", "64:ff9b::a00:5",
				"64:ff9b:1::a00:5", "2002:a00:5::1", "2001:0:4136:e378:8000:63bf:80ff:fffe", "ff02::1", "10.0.0.5", "127.0.0.1"}},
		{"a unique-local network keeps AWS's metadata refused", "fd00::/8",
			[]string{"fd12::1", "fd00:ec2::1"},
			[]string{"fd00:ec2::254", "fd00:ec2::23", "fc00::1"}},
		{"the link-local network keeps metadata refused", "169.254.0.0/16",
			[]string{"169.254.1.1", "169.254.169.253"},
			[]string{"169.254.169.254", "169.254.170.2", "169.254.170.23"}},
		{"several networks", "10.0.0.0/8, 192.168.0.0/16,fd00::/8",
			[]string{"10.9.9.9", "192.168.1.1", "fd12::1"},
			[]string{"172.16.0.1", "127.0.0.1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := allowing(t, c.networks, nil)
			for _, s := range c.admits {
				if !reaches(t, g, netip.MustParseAddr(s)) {
					t.Errorf("%s is refused", s)
				}
			}
			for _, s := range c.refuses {
				if reaches(t, g, netip.MustParseAddr(s)) {
					t.Errorf("%s is admitted", s)
				}
			}
		})
	}
}

// TestEachSpecialRangeNamedAlone names each range of the special-purpose table as the one allowed
// network: its first, a middle and its last address are then reached, and the addresses just outside
// it only when public. The ranges that reach no single host or embed an IPv4 address cannot be named,
// and stay refused under a network as wide as the address family.
func TestEachSpecialRangeNamedAlone(t *testing.T) {
	unnamable := map[string]bool{"0.0.0.0/8": true, "224.0.0.0/4": true, "255.255.255.255/32": true, "::/128": true,
		"64:ff9b::/96": true, "64:ff9b:1::/48": true, "2001::/32": true, "2002::/16": true, "::/96": true,
		"::ffff:0:0:0/96": true, "ff00::/8": true}
	// Inside ranges that can be named, and never reached: Teredo in 2001::/23, the limited broadcast
	// address in 240.0.0.0/4.
	inside := []netip.Prefix{netip.MustParsePrefix("2001::/32"), netip.MustParsePrefix("255.255.255.255/32")}
	for _, r := range specialRanges {
		p := r.prefix
		first, last := p.Addr(), lastOf(p)
		middle := first
		for i := 0; i < 12 && p.Contains(middle.Next()); i++ {
			middle = middle.Next()
		}
		_, err := ParseNetworks(p.String())
		if unnamable[p.String()] {
			if err == nil || !strings.Contains(err.Error(), "never reach") {
				t.Errorf("naming %s (%s): %v, want it refused as never reached", p, r.name, err)
			}
			wide := "::/0"
			if p.Addr().Is4() {
				wide = "0.0.0.0/0"
			}
			g := allowing(t, wide, nil)
			for _, ip := range []netip.Addr{first, middle, last} {
				if ip != netip.MustParseAddr("::1") && reaches(t, g, ip) {
					t.Errorf("%s (%s): %s is reached with %s allowed", p, r.name, ip, wide)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("naming %s (%s): %v", p, r.name, err)
			continue
		}
		g := allowing(t, p.String(), nil)
		for _, ip := range []netip.Addr{first, middle, last} {
			if want := !slices.ContainsFunc(inside, func(p netip.Prefix) bool { return p.Contains(ip) }); reaches(t, g, ip) != want {
				t.Errorf("%s (%s) allowed: %s reached %t, want %t", p, r.name, ip, !want, want)
			}
		}
		for _, ip := range []netip.Addr{first.Prev(), last.Next()} {
			if ip.IsValid() && !p.Contains(ip) && reaches(t, g, ip) != publicAddr(ip) {
				t.Errorf("%s (%s) allowed: %s, just outside, reached %t, want %t", p, r.name, ip, !publicAddr(ip), publicAddr(ip))
			}
		}
	}
}

// TestParseNetworks checks the flag's parsing: a bad network fails with a message saying what is
// wanted.
func TestParseNetworks(t *testing.T) {
	got, err := ParseNetworks(" 10.0.0.0/8,fd00::/8 ,::ffff:192.168.0.0/112,127.0.0.1/32")
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"),
		netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("127.0.0.1/32")}
	if err != nil || len(got) != len(want) {
		t.Fatalf("ParseNetworks = %v, %v; want %v", got, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("network %d = %s, want %s", i, got[i], want[i])
		}
	}
	if got, err := ParseNetworks(""); err != nil || got != nil {
		t.Errorf("ParseNetworks(\"\") = %v, %v; want none", got, err)
	}
	for in, say := range map[string]string{
		"10.0.0.5":           "10.0.0.5/32",
		"10.1.2.3/8":         "10.0.0.0/8",
		"banana":             "CIDR notation",
		"10.0.0.0/33":        "CIDR notation",
		"10.0.0.0/8,":        "empty",
		"fe80::/10%eth0":     "CIDR notation",
		"169.254.169.254/32": "never reach",
		"fd00:ec2::254/128":  "never reach",
		"64:ff9b::/96":       "never reach",
		"224.0.0.0/8":        "never reach",
	} {
		if _, err := ParseNetworks(in); err == nil || !strings.Contains(err.Error(), say) {
			t.Errorf("ParseNetworks(%q) = %v, want an error saying %q", in, err, say)
		}
	}
	// The service refuses the same networks when given them directly.
	if _, err := New(Config{AllowNetworks: []netip.Prefix{netip.MustParsePrefix("10.1.2.3/8")}, SealKey: bytes.Repeat([]byte{9}, 32)}); err == nil {
		t.Error("New with 10.1.2.3/8 allowed: no error")
	}
}

// TestNamesResolveOnlyIntoAllowedNetworks registers names that a DNS server answers: a name is
// accepted only when every address it resolves to is public or inside an allowed network, and a
// refusal says the same whether the name resolves to a private address or not at all.
func TestNamesResolveOnlyIntoAllowedNetworks(t *testing.T) {
	r := dnsServer(t, map[string][]string{
		"partner.hospital.test.":  {"10.20.0.7"},
		"mixed.hospital.test.":    {"10.20.0.7", "172.16.0.9"},
		"dual.hospital.test.":     {"10.20.0.8", "fd12::8"},
		"metadata.hospital.test.": {"169.254.169.254"},
		"loop.hospital.test.":     {"127.0.0.1"},
		"partner.internal.":       {"10.20.0.9"},
	})
	for _, c := range []struct {
		networks, host string
		ok             bool
	}{
		{"", "partner.hospital.test", false},
		{"10.0.0.0/8", "partner.hospital.test", true},
		{"10.20.0.0/16", "partner.hospital.test", true},
		{"10.20.1.0/24", "partner.hospital.test", false},
		{"10.0.0.0/8", "mixed.hospital.test", false},
		{"10.0.0.0/8,172.16.0.0/12", "mixed.hospital.test", true},
		{"10.0.0.0/8", "dual.hospital.test", false},
		{"10.0.0.0/8,fd00::/8", "dual.hospital.test", true},
		{"0.0.0.0/0", "metadata.hospital.test", false},
		{"10.0.0.0/8", "loop.hospital.test", false},
		{"127.0.0.0/8", "loop.hospital.test", true},
		{"", "partner.internal", false},
		{"10.0.0.0/8", "partner.internal", true},
	} {
		_, err := allowing(t, c.networks, r).checkURL(context.Background(), "https://"+c.host+"/hook")
		if (err == nil) != c.ok {
			t.Errorf("%s with %q allowed: %v, want accepted %t", c.host, c.networks, err, c.ok)
		}
	}
	// A name refused because of where it resolves and a name that does not exist read alike.
	_, private := allowing(t, "", r).checkURL(context.Background(), "https://partner.hospital.test/hook")
	_, missing := allowing(t, "", r).checkURL(context.Background(), "https://nowhere.hospital.test/hook")
	if private == nil || missing == nil || private.Error() != missing.Error() {
		t.Errorf("a private name: %v; a missing one: %v; want the same refusal", private, missing)
	}
	if !strings.Contains(private.Error(), "--webhook-allow-networks") {
		t.Errorf("the refusal %q does not say how an operator allows a network", private)
	}
}

// dnsServer serves A and AAAA answers for the names given (any other name does not exist) on a UDP
// socket on 127.0.0.1, and returns a resolver that asks it alone.
func dnsServer(t *testing.T, names map[string][]string) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out, err := dnsAnswer(buf[:n], names); err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

// dnsAnswer answers a DNS query (RFC 1035 section 4) of one question.
func dnsAnswer(q []byte, names map[string][]string) ([]byte, error) {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil, errors.New("not a query of one question")
	}
	var name strings.Builder
	i := 12
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if l > 63 || i+1+l >= len(q) {
			return nil, errors.New("bad name")
		}
		name.WriteString(strings.ToLower(string(q[i+1:i+1+l])) + ".")
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil, errors.New("short question")
	}
	end := i + 5
	qtype := binary.BigEndian.Uint16(q[i+1:])
	var answers []netip.Addr
	addrs, known := names[name.String()]
	for _, s := range addrs {
		if a := netip.MustParseAddr(s); a.Is4() == (qtype == 1) && (qtype == 1 || qtype == 28) {
			answers = append(answers, a)
		}
	}
	out := append([]byte{}, q[:end]...)
	flags := uint16(0x8180) // a response, recursion desired and available
	if !known {
		flags |= 3 // NXDOMAIN
	}
	binary.BigEndian.PutUint16(out[2:], flags)
	binary.BigEndian.PutUint16(out[6:], uint16(len(answers)))
	binary.BigEndian.PutUint16(out[8:], 0)
	binary.BigEndian.PutUint16(out[10:], 0)
	for _, a := range answers {
		out = append(out, 0xc0, 12) // the question's name
		out = binary.BigEndian.AppendUint16(out, qtype)
		out = binary.BigEndian.AppendUint16(out, 1)  // IN
		out = binary.BigEndian.AppendUint32(out, 60) // TTL
		b := a.AsSlice()
		out = binary.BigEndian.AppendUint16(out, uint16(len(b)))
		out = append(out, b...)
	}
	return out, nil
}
