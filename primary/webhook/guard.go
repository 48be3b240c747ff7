package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dirsvc/dirsvc"
)

// A webhook makes the primary send requests to addresses a partner names, so the primary must never
// be made to reach what is not public on the internet: its own loopback, the private network it runs
// in, link-local addresses (where clouds serve instance metadata), carrier-grade NAT, or addresses
// that embed one of those. An endpoint's address is checked when it is registered, and every
// connection is checked again at connect time, on the address actually dialled: a name that resolved
// to a public address at registration and to a private one later (DNS rebinding) is refused.
//
// An operator may allow networks besides the public internet (Config.AllowNetworks, the flag
// --webhook-allow-networks): a partner system inside the health network the primary runs in, or a
// developer's receiver on 127.0.0.1. An address inside one is reached; loopback only inside a
// loopback network; cloud metadata and the other neverRanges never. The checks are the same, at
// registration and at connect time.

// specialRange is an entry of the IANA special-purpose address registries (IPv4 and IPv6) that a
// webhook may never reach, or a range that embeds an IPv4 address (which a relay or translator
// reaches on the sender's behalf, whatever that address is).
type specialRange struct {
	prefix netip.Prefix
	name   string
	rfc    string
}

// specialRanges are the ranges that are not public unicast internet addresses: every entry of the
// IANA IPv4 and IPv6 special-purpose address registries that is not globally reachable, multicast,
// and every range that embeds or translates an IPv4 address. An IPv4-mapped address (::ffff:0:0/96)
// is the IPv4 address itself and is checked as one.
var specialRanges = func() []specialRange {
	var out []specialRange
	for _, r := range [][3]string{
		// IANA IPv4 Special-Purpose Address Registry.
		{"0.0.0.0/8", "this network", "RFC 791"},
		{"10.0.0.0/8", "private use", "RFC 1918"},
		{"100.64.0.0/10", "shared address space (carrier-grade NAT)", "RFC 6598"},
		{"127.0.0.0/8", "loopback", "RFC 1122"},
		{"169.254.0.0/16", "link local", "RFC 3927"},
		{"172.16.0.0/12", "private use", "RFC 1918"},
		{"192.0.0.0/24", "IETF protocol assignments", "RFC 6890"},
		{"192.0.2.0/24", "documentation (TEST-NET-1)", "RFC 5737"},
		{"192.31.196.0/24", "AS112-v4", "RFC 7535"},
		{"192.52.193.0/24", "AMT", "RFC 7450"},
		{"192.88.99.0/24", "deprecated 6to4 relay anycast", "RFC 7526"},
		{"192.168.0.0/16", "private use", "RFC 1918"},
		{"192.175.48.0/24", "direct delegation AS112 service", "RFC 7534"},
		{"198.18.0.0/15", "benchmarking", "RFC 2544"},
		{"198.51.100.0/24", "documentation (TEST-NET-2)", "RFC 5737"},
		{"203.0.113.0/24", "documentation (TEST-NET-3)", "RFC 5737"},
		{"224.0.0.0/4", "multicast", "RFC 5771"},
		{"240.0.0.0/4", "reserved", "RFC 1112"},
		{"255.255.255.255/32", "limited broadcast", "RFC 919"},
		// IANA IPv6 Special-Purpose Address Registry.
		{"::1/128", "loopback address", "RFC 4291"},
		{"::/128", "unspecified address", "RFC 4291"},
		{"64:ff9b::/96", "IPv4-IPv6 translation (embeds an IPv4 address)", "RFC 6052"},
		{"64:ff9b:1::/48", "local-use IPv4/IPv6 translation (embeds an IPv4 address)", "RFC 8215"},
		{"100::/64", "discard-only address block", "RFC 6666"},
		{"100:0:0:1::/64", "dummy IPv6 prefix", "RFC 9780"},
		{"2001::/23", "IETF protocol assignments", "RFC 2928"},
		{"2001::/32", "Teredo (embeds an IPv4 address)", "RFC 4380"},
		{"2001:2::/48", "benchmarking", "RFC 5180"},
		{"2001:db8::/32", "documentation", "RFC 3849"},
		{"2002::/16", "6to4 (embeds an IPv4 address)", "RFC 3056"},
		{"2620:4f:8000::/48", "direct delegation AS112 service", "RFC 7534"},
		{"3fff::/20", "documentation", "RFC 9637"},
		{"5f00::/16", "segment routing SIDs", "RFC 9602"},
		{"fc00::/7", "unique-local", "RFC 4193"},
		{"fe80::/10", "link-local unicast", "RFC 4291"},
		// Ranges beyond the registries' current entries.
		{"::/96", "IPv4-compatible (deprecated; embeds an IPv4 address)", "RFC 4291"},
		{"::ffff:0:0:0/96", "IPv4-translated (embeds an IPv4 address)", "RFC 2765"},
		{"fec0::/10", "site-local (deprecated)", "RFC 3879"},
		{"ff00::/8", "multicast", "RFC 4291"},
	} {
		out = append(out, specialRange{netip.MustParsePrefix(r[0]), r[1], r[2]})
	}
	return out
}()

// specialRangeOf returns the special range that holds ip (an IPv4-mapped address as its IPv4
// address), or nil when ip is a public unicast internet address.
func specialRangeOf(ip netip.Addr) *specialRange {
	ip = ip.Unmap()
	for i := range specialRanges {
		if specialRanges[i].prefix.Contains(ip) {
			return &specialRanges[i]
		}
	}
	return nil
}

// publicAddr reports whether ip is a public unicast internet address.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() ||
		ip.IsMulticast() || ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	return specialRangeOf(ip) == nil
}

// errNotPublic is the cause of a connection refused at connect time.
var errNotPublic = errors.New("the address is not a public internet address")

// neverRanges are never reached, whatever networks the operator allows: cloud instance metadata and
// credential services (a receiver there would hand a partner the machine's credentials), addresses
// that reach no single host, and the ranges that embed an IPv4 address, which a translator or relay
// reaches whatever that address is (a network is allowed by naming the IPv4 network itself).
var neverRanges = func() []specialRange {
	var out []specialRange
	for _, r := range [][3]string{
		{"169.254.169.254/32", "cloud instance metadata (AWS, Azure, Google Cloud, Oracle Cloud, OpenStack, DigitalOcean)", "provider documentation"},
		{"169.254.170.2/32", "container credentials (Amazon ECS)", "provider documentation"},
		{"169.254.170.23/32", "pod identity credentials (Amazon EKS)", "provider documentation"},
		{"fd00:ec2::254/128", "cloud instance metadata (AWS, IPv6)", "provider documentation"},
		{"fd00:ec2::23/128", "pod identity credentials (Amazon EKS, IPv6)", "provider documentation"},
		{"100.100.100.200/32", "cloud instance metadata (Alibaba Cloud)", "provider documentation"},
		{"168.63.129.16/32", "host agent (Azure WireServer)", "provider documentation"},
		{"192.0.0.192/32", "cloud instance metadata (Oracle Cloud Classic)", "provider documentation"},
		{"0.0.0.0/8", "this network (0.0.0.0 reaches the host itself)", "RFC 791"},
		{"::/128", "unspecified address (reaches the host itself)", "RFC 4291"},
		{"224.0.0.0/4", "multicast", "RFC 5771"},
		{"ff00::/8", "multicast", "RFC 4291"},
		{"255.255.255.255/32", "limited broadcast", "RFC 919"},
		{"::/96", "IPv4-compatible (embeds an IPv4 address)", "RFC 4291"},
		{"::ffff:0:0:0/96", "IPv4-translated (embeds an IPv4 address)", "RFC 2765"},
		{"64:ff9b::/96", "IPv4-IPv6 translation (embeds an IPv4 address)", "RFC 6052"},
		{"64:ff9b:1::/48", "local-use IPv4/IPv6 translation (embeds an IPv4 address)", "RFC 8215"},
		{"2001::/32", "Teredo (embeds an IPv4 address)", "RFC 4380"},
		{"2002::/16", "6to4 (embeds an IPv4 address)", "RFC 3056"},
	} {
		out = append(out, specialRange{netip.MustParsePrefix(r[0]), r[1], r[2]})
	}
	return out
}()

// neverRangeOf returns the range of neverRanges that holds ip (an IPv4-mapped address as its IPv4
// address), or nil. The loopback address ::1, inside ::/96, is loopback and not held.
func neverRangeOf(ip netip.Addr) *specialRange {
	ip = ip.Unmap()
	if ip.IsLoopback() {
		return nil
	}
	for i := range neverRanges {
		if neverRanges[i].prefix.Contains(ip) {
			return &neverRanges[i]
		}
	}
	return nil
}

// loopbackNetwork reports whether every address of p is a loopback address: only such a network
// lets webhooks reach the primary's own host, so that a wide network (10.0.0.0/8, or 0.0.0.0/0)
// never opens the services listening on loopback.
func loopbackNetwork(p netip.Prefix) bool {
	return p.Addr().IsLoopback() && (p.Addr().Is4() && p.Bits() >= 8 || p.Addr().Is6() && p.Bits() == 128)
}

// CheckNetworks checks the networks an operator allows webhooks to reach besides the public
// internet, and returns them as guards compare them: an IPv4-mapped network as its IPv4 network. A
// network with bits set past its prefix length is refused (10.1.2.3/8 is a slip for 10.0.0.0/8 or
// 10.1.2.3/32), and so is one that lies wholly in a range never reached (see neverRanges).
func CheckNetworks(networks []netip.Prefix) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(networks))
	for _, p := range networks {
		if !p.IsValid() {
			return nil, errors.New("an invalid network")
		}
		if p != p.Masked() {
			return nil, fmt.Errorf("%s has bits set past its prefix length: %s names the network, %s the one address",
				p, p.Masked(), netip.PrefixFrom(p.Addr(), p.Addr().BitLen()))
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		for _, r := range neverRanges {
			if !loopbackNetwork(p) && r.prefix.Bits() <= p.Bits() && r.prefix.Contains(p.Addr()) {
				return nil, fmt.Errorf("%s holds only addresses webhooks never reach: %s (%s)", p, r.name, r.prefix)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// ParseNetworks parses a comma-separated list of networks in CIDR notation (10.0.0.0/8,fd00::/8),
// checked by CheckNetworks. An empty list allows none.
func ParseNetworks(list string) ([]netip.Prefix, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var ps []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, errors.New("an empty item: networks are separated by single commas")
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			if _, aerr := netip.ParseAddr(s); aerr == nil {
				return nil, fmt.Errorf("%q is an address: name a network as ADDRESS/BITS (one address: %s/%d)", s, s, netip.MustParseAddr(s).BitLen())
			}
			return nil, fmt.Errorf("%q is not a network in CIDR notation, e.g. 10.0.0.0/8 or fd00::/8", s)
		}
		ps = append(ps, p)
	}
	return CheckNetworks(ps)
}

// guard decides which addresses the primary may send webhooks to.
type guard struct {
	// networks are the operator's networks, besides the public internet, that may be reached
	// (Config.AllowNetworks, checked by CheckNetworks).
	networks []netip.Prefix
	// allowAll lets every address through: mirrors' harvests with --mirror-allow-loopback (see
	// NewGuard).
	allowAll bool
	resolver *net.Resolver
}

// allows reports whether the primary may connect to ip: a public address, or one inside a network
// the operator allowed (a loopback address only inside a loopback network), never one of
// neverRanges.
func (g *guard) allows(ip netip.Addr) bool {
	if g.allowAll {
		return true
	}
	ip = ip.Unmap()
	if !ip.IsValid() || ip.Zone() != "" || neverRangeOf(ip) != nil {
		return false
	}
	if publicAddr(ip) {
		return true
	}
	for _, p := range g.networks {
		if p.Contains(ip) && (!ip.IsLoopback() || loopbackNetwork(p)) {
			return true
		}
	}
	return false
}

// control is the dialer's check of every connection, on the address it is about to connect to.
func (g *guard) control(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !g.allows(ip) {
		return errNotPublic
	}
	return nil
}

// maxURL bounds an endpoint's URL.
const maxURL = 2000

// checkURL checks an endpoint's URL at registration: https, no credentials, a host that is, or
// resolves only to, public addresses. It returns the URL as it will be used.
func (g *guard) checkURL(ctx context.Context, raw string) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", dirsvc.InvalidParam("url", format, args...)
	}
	if len(raw) > maxURL {
		return bad("at most %d characters", maxURL)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "":
		return bad("not an absolute URL")
	case u.Scheme != "https":
		return bad("the endpoint must use https")
	case u.User != nil:
		return bad("the URL may not hold credentials")
	case u.Fragment != "":
		return bad("the URL may not hold a fragment")
	}
	if port := u.Port(); port != "" {
		if p, err := net.LookupPort("tcp", port); err != nil || p == 0 {
			return bad("the port is not valid")
		}
	}
	if msg := g.checkHost(ctx, u.Hostname()); msg != "" {
		// The same words whatever the operator allowed and whatever the name resolved to: a
		// partner learns nothing of the network the primary runs in.
		return bad("%s; receivers on a private network are reached only where the operator allows that network (--webhook-allow-networks)", msg)
	}
	return u.String(), nil
}

// checkHost says why host is not an address the guard allows, or a name that resolves only to
// such addresses; "" when it is. A name that does not resolve and one that resolves to an address
// not allowed get the same answer: a partner learns nothing of the names known inside the
// network the primary runs in.
func (g *guard) checkHost(ctx context.Context, host string) string {
	if g.allowAll {
		return ""
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !g.allows(ip) {
			return "the address is not a public internet address"
		}
		return ""
	}
	// Names that are never public are refused without a lookup, unless the operator allowed a
	// network, where such names (partner.internal) may be a receiver's.
	if name := strings.ToLower(strings.TrimSuffix(host, ".")); len(g.networks) == 0 && (name == "localhost" ||
		strings.HasSuffix(name, ".localhost") || strings.HasSuffix(name, ".local") || strings.HasSuffix(name, ".internal") ||
		!strings.Contains(name, ".")) {
		return "the host is not a public internet name"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 || slices.ContainsFunc(addrs, func(a netip.Addr) bool { return !g.allows(a) }) {
		return "the host does not resolve, or not to public internet addresses only"
	}
	return ""
}

// Guard is the check of outbound addresses for other senders of the primary (mirroring harvests):
// the very rules webhooks follow, at registration and at every connection.
type Guard struct{ g guard }

// NewGuard returns a guard of public addresses; allowAll lets every address through, loopback and
// private ones included (mirrors' --mirror-allow-loopback, for tests and local setups only).
func NewGuard(allowAll bool) *Guard { return &Guard{guard{allowAll: allowAll}} }

// AllowsPrivate reports whether the guard lets every address through.
func (g *Guard) AllowsPrivate() bool { return g.g.allowAll }

// CheckHost says why host is not a public internet address or name, or "" when it is.
func (g *Guard) CheckHost(ctx context.Context, host string) string { return g.g.checkHost(ctx, host) }

// Control is a net.Dialer Control function that refuses a connection to an address that is not
// public, on the address actually dialled.
func (g *Guard) Control(network, address string, c syscall.RawConn) error {
	return g.g.control(network, address, c)
}
