package page

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// hostPlaceholder stands in the commands when no address can be told.
const hostPlaceholder = "<home-assistant-address>"

// endpoint is where agents reach the API, and how the page found it.
type endpoint struct {
	Host string // as written in a URL: a name, an IPv4 address or [IPv6]
	Port uint16
	How  string // one sentence for the page
}

// URL returns the MCP URL agents connect to.
func (e endpoint) URL() string {
	return "http://" + e.Host + ":" + strconv.Itoa(int(e.Port)) + "/mcp"
}

// agentEndpoint decides the address agents on the LAN use to reach the API
// listener api, in this order:
//
//  1. The API listener's own address, when it is bound to one (not 0.0.0.0
//     or ::): agents can reach it nowhere else.
//  2. For a request through the ingress proxy, the host of X-Forwarded-Host:
//     the address the admin's browser reaches Home Assistant on, where the
//     add-on publishes its port (the add-on runs in its own network, so its
//     interfaces do not know the LAN address). A Home Assistant Cloud remote
//     name (*.ui.nabu.casa) is no LAN address and is skipped; without a usable
//     host the commands carry a placeholder.
//  3. Otherwise (a plain binary listening on every interface) the first
//     private IPv4 address of this machine's interfaces (ifaces, up and not
//     loopback), else the first other global IPv4 address.
func agentEndpoint(api netip.AddrPort, viaProxy bool, forwardedHost string, ifaces []net.Addr) endpoint {
	e := endpoint{Port: api.Port()}
	if a := api.Addr().Unmap(); a.IsValid() && !a.IsUnspecified() {
		e.Host, e.How = urlHost(a), "the address the API listens on"
		return e
	}
	if viaProxy {
		if h, ok := forwardedName(forwardedHost); ok {
			e.Host, e.How = h, "the address your browser uses for Home Assistant"
			return e
		}
		e.Host, e.How = hostPlaceholder, "replace the placeholder with your Home Assistant's LAN address"
		return e
	}
	if a, ok := lanIPv4(ifaces); ok {
		e.Host, e.How = a.String(), "this machine's first LAN address"
		return e
	}
	e.Host, e.How = hostPlaceholder, "no LAN address found: replace the placeholder with this machine's address"
	return e
}

func urlHost(a netip.Addr) string {
	if a.Is6() {
		return "[" + a.String() + "]"
	}
	return a.String()
}

// forwardedName returns the host of the first X-Forwarded-Host entry,
// written for a URL, when it is an IP address or a DNS name.
func forwardedName(v string) (string, bool) {
	v, _, _ = strings.Cut(v, ",")
	v = strings.TrimSpace(v)
	host := v
	if h, _, err := net.SplitHostPort(v); err == nil {
		host = h
	} else if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		host = v[1 : len(v)-1]
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() {
			return "", false
		}
		return urlHost(a.Unmap()), true
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if !dnsName(host) || strings.HasSuffix(host, ".ui.nabu.casa") {
		return "", false
	}
	return host, true
}

// dnsName reports whether s is a host name: dot-separated labels of 1 to 63
// letters, digits and hyphens, not starting or ending with a hyphen, 253
// characters at most, and not all digits (that would be a malformed
// address).
func dnsName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	digitsOnly := true
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c == '-':
				digitsOnly = false
			default:
				return false
			}
		}
	}
	return !digitsOnly
}

// lanIPv4 picks the first private IPv4 address among addrs, else the first
// global unicast IPv4 address. Loopback and link-local addresses never
// qualify.
func lanIPv4(addrs []net.Addr) (netip.Addr, bool) {
	var global netip.Addr
	for _, na := range addrs {
		var ip net.IP
		switch v := na.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		default:
			continue
		}
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			continue
		}
		a = a.Unmap()
		if !a.Is4() || !a.IsGlobalUnicast() {
			continue
		}
		if a.IsPrivate() {
			return a, true
		}
		if !global.IsValid() {
			global = a
		}
	}
	return global, global.IsValid()
}

// virtualPrefixes name interfaces of containers and virtual machines, whose
// addresses agents on the LAN cannot reach.
var virtualPrefixes = []string{"docker", "br-", "veth", "virbr", "cni", "flannel", "podman"}

// InterfaceAddrs returns the addresses of this machine's interfaces that are
// up, not loopback and not a container or VM bridge, in interface order:
// the candidates for the LAN address a plain binary shows.
func InterfaceAddrs() []net.Addr {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out []net.Addr
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 || virtual(ifc.Name) {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		out = append(out, addrs...)
	}
	return out
}

func virtual(name string) bool {
	for _, p := range virtualPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
