package web

import (
	"fmt"
	"net/netip"
)

// block is a special-purpose address block (IANA IPv4 and IPv6
// Special-Purpose Address Registries) that netip.Addr's methods do not
// classify.
type block struct {
	prefix netip.Prefix
	name   string
}

// reserved lists the refused blocks beyond those of netip.Addr's methods.
// IPv6 outside 2000::/3 is refused as a whole, so only the blocks inside it
// are listed.
var reserved = []block{
	{netip.MustParsePrefix("0.0.0.0/8"), `a "this network" address (0.0.0.0/8)`},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (CGNAT) address (100.64.0.0/10)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address (192.0.2.0/24)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay anycast address (192.88.99.0/24)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address (198.18.0.0/15)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address (198.51.100.0/24)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address (203.0.113.0/24)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved or broadcast address (240.0.0.0/4)"},
	{netip.MustParsePrefix("2001::/23"), "an IETF protocol assignment, such as Teredo or benchmarking (2001::/23)"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address (2001:db8::/32)"},
	{netip.MustParsePrefix("3fff::/20"), "a documentation address (3fff::/20)"},
}

var (
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
)

// refusal returns "" when a is a public unicast address the web tools may
// connect to, and otherwise what kind of address it is, as in "a loopback
// address".
func refusal(a netip.Addr) string {
	if !a.IsValid() {
		return "not a valid address"
	}
	if a.Zone() != "" {
		return "a scoped IPv6 address"
	}
	if a.Is4In6() {
		if r := refusal(a.Unmap()); r != "" {
			return "an IPv4-mapped form of " + r
		}
		return ""
	}
	switch {
	case a.IsUnspecified():
		return "an unspecified address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsPrivate():
		return "a private address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast():
		return "a multicast address"
	}
	for _, b := range reserved {
		if b.prefix.Contains(a) {
			return b.name
		}
	}
	if !a.Is6() {
		return ""
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		if r := refusal(netip.AddrFrom4([4]byte(b[12:16]))); r != "" {
			return "a NAT64 form of " + r
		}
		return ""
	case sixToFour.Contains(a):
		if r := refusal(netip.AddrFrom4([4]byte(b[2:6]))); r != "" {
			return "a 6to4 form of " + r
		}
		return ""
	case !globalUnicast6.Contains(a):
		return "an IPv6 address outside global unicast (2000::/3)"
	}
	return ""
}

// forbiddenAddressError reports a destination the transport refused to
// connect to.
type forbiddenAddressError struct {
	host   string // as the URL names it; equal to addr for a literal address
	addr   netip.Addr
	reason string
}

func (e *forbiddenAddressError) Error() string {
	if e.host == e.addr.String() {
		return fmt.Sprintf("%s is %s; the web tools reach only public addresses", e.host, e.reason)
	}
	return fmt.Sprintf("host %s resolves to %s, %s; the web tools reach only public addresses", e.host, e.addr, e.reason)
}

// checkAddr returns a *forbiddenAddressError unless a is public.
func checkAddr(host string, a netip.Addr) error {
	if r := refusal(a); r != "" {
		return &forbiddenAddressError{host: host, addr: a, reason: r}
	}
	return nil
}
