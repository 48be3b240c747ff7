package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
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

// blocked are ranges that are not public unicast internet addresses, beyond what netip reports as
// private, loopback, link-local, multicast or unspecified.
var blocked = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",         // this network
		"100.64.0.0/10",     // carrier-grade NAT (and some clouds' metadata, e.g. 100.100.100.200)
		"192.0.0.0/24",      // IETF protocol assignments
		"192.0.2.0/24",      // documentation
		"198.18.0.0/15",     // benchmarking
		"198.51.100.0/24",   // documentation
		"203.0.113.0/24",    // documentation
		"240.0.0.0/4",       // reserved, and the broadcast address
		"64:ff9b::/96",      // NAT64: embeds an IPv4 address
		"64:ff9b:1::/48",    // local NAT64
		"100::/64",          // discard
		"2001::/32",         // Teredo: embeds an IPv4 address
		"2001:db8::/32",     // documentation
		"2002::/16",         // 6to4: embeds an IPv4 address
		"fec0::/10",         // site-local (deprecated)
		"::ffff:0:0:0/96",   // IPv4-translated
		"fd00:ec2::254/128", // a cloud's metadata (also inside fc00::/7)
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// publicAddr reports whether ip is a public unicast internet address.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() ||
		ip.IsMulticast() || ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range blocked {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// errNotPublic is the cause of a connection refused at connect time.
var errNotPublic = errors.New("the address is not a public internet address")

// guard decides which addresses the primary may send webhooks to.
type guard struct {
	// allowPrivate lets tests reach receivers on 127.0.0.1 (Config.AllowPrivateAddresses).
	allowPrivate bool
	resolver     *net.Resolver
}

// control is the dialer's check of every connection, on the address it is about to connect to.
func (g *guard) control(network, address string, _ syscall.RawConn) error {
	if g.allowPrivate {
		return nil
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !publicAddr(ip) {
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
		return bad("%s", msg)
	}
	return u.String(), nil
}

// checkHost says why host is not a public internet address or name, or "" when it is (or when
// private addresses are allowed).
func (g *guard) checkHost(ctx context.Context, host string) string {
	if g.allowPrivate {
		return ""
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !publicAddr(ip) {
			return "the address is not a public internet address"
		}
		return ""
	}
	if name := strings.ToLower(strings.TrimSuffix(host, ".")); name == "localhost" || strings.HasSuffix(name, ".localhost") ||
		strings.HasSuffix(name, ".local") || strings.HasSuffix(name, ".internal") || !strings.Contains(name, ".") {
		return "the host is not a public internet name"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return "the host does not resolve"
	}
	for _, a := range addrs {
		if !publicAddr(a) {
			return fmt.Sprintf("the host resolves to an address that is not public (%s)", kindOf(a))
		}
	}
	return ""
}

// Guard is the check of outbound addresses for other senders of the primary (mirroring harvests):
// the very rules webhooks follow, at registration and at every connection.
type Guard struct{ g guard }

// NewGuard returns a guard; allowPrivate lets loopback and private addresses through (tests and
// local setups only).
func NewGuard(allowPrivate bool) *Guard { return &Guard{guard{allowPrivate: allowPrivate}} }

// AllowsPrivate reports whether the guard lets private addresses through.
func (g *Guard) AllowsPrivate() bool { return g.g.allowPrivate }

// CheckHost says why host is not a public internet address or name, or "" when it is.
func (g *Guard) CheckHost(ctx context.Context, host string) string { return g.g.checkHost(ctx, host) }

// Control is a net.Dialer Control function that refuses a connection to an address that is not
// public, on the address actually dialled.
func (g *Guard) Control(network, address string, c syscall.RawConn) error {
	return g.g.control(network, address, c)
}

// kindOf names the kind of a non-public address, for the registering partner.
func kindOf(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case netip.MustParsePrefix("100.64.0.0/10").Contains(ip):
		return "carrier-grade NAT"
	}
	return fmt.Sprintf("reserved range of %s", ip)
}
