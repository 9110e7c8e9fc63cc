package page

import (
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func ipnet(s string) net.Addr {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	n.IP = ip
	return n
}

func TestAgentEndpoint(t *testing.T) {
	t.Parallel()
	lan := []net.Addr{ipnet("fe80::1/64"), ipnet("203.0.113.7/24"), ipnet("192.168.1.20/24"), ipnet("10.0.0.2/8")}
	for _, tc := range []struct {
		name      string
		api       string
		viaProxy  bool
		forwarded string
		ifaces    []net.Addr
		want      string
	}{
		{"BoundAddress", "127.0.0.1:8765", false, "", lan, "http://127.0.0.1:8765/mcp"},
		{"BoundAddressWinsOverProxy", "192.168.1.9:8765", true, "ha.example:8123", lan, "http://192.168.1.9:8765/mcp"},
		{"BoundIPv6", "[fd00::5]:8765", false, "", nil, "http://[fd00::5]:8765/mcp"},
		{"ProxyForwardedIP", "0.0.0.0:8765", true, "192.168.1.10:8123", lan, "http://192.168.1.10:8765/mcp"},
		{"ProxyForwardedName", "[::]:8765", true, "HomeAssistant.local:8123", nil, "http://homeassistant.local:8765/mcp"},
		{"ProxyForwardedFirstOfList", "0.0.0.0:8765", true, "ha.lan, proxy.internal", nil, "http://ha.lan:8765/mcp"},
		{"ProxyForwardedIPv6", "0.0.0.0:8765", true, "[fd00::10]:8123", nil, "http://[fd00::10]:8765/mcp"},
		{"ProxyCloudNameSkipped", "0.0.0.0:8765", true, "abcdef.ui.nabu.casa", lan, "http://" + hostPlaceholder + ":8765/mcp"},
		{"ProxyNoHeader", "0.0.0.0:8765", true, "", lan, "http://" + hostPlaceholder + ":8765/mcp"},
		{"ProxyGarbage", "0.0.0.0:8765", true, "a b<script>", lan, "http://" + hostPlaceholder + ":8765/mcp"},
		{"LoopbackIgnoresForwarded", "0.0.0.0:8765", false, "evil.example", lan, "http://192.168.1.20:8765/mcp"},
		{"InterfacesGlobalOnly", "0.0.0.0:9000", false, "", []net.Addr{ipnet("203.0.113.7/24")}, "http://203.0.113.7:9000/mcp"},
		{"InterfacesNone", "0.0.0.0:8765", false, "", []net.Addr{ipnet("fe80::1/64"), ipnet("169.254.1.1/16")}, "http://" + hostPlaceholder + ":8765/mcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := agentEndpoint(netip.MustParseAddrPort(tc.api), tc.viaProxy, tc.forwarded, tc.ifaces)
			if got := e.URL(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			if e.How == "" {
				t.Error("How is empty")
			}
		})
	}
}

func TestLanIPv4(t *testing.T) {
	t.Parallel()
	got, ok := lanIPv4([]net.Addr{ipnet("127.0.0.1/8"), ipnet("100.64.1.2/10"), ipnet("10.1.2.3/8"), &net.IPAddr{IP: net.ParseIP("192.168.0.2")}})
	if !ok || got != netip.MustParseAddr("10.1.2.3") {
		t.Errorf("got %v %v, want the first private address 10.1.2.3", got, ok)
	}
	got, ok = lanIPv4([]net.Addr{&net.IPAddr{IP: net.ParseIP("::ffff:192.168.0.2")}})
	if !ok || got != netip.MustParseAddr("192.168.0.2") {
		t.Errorf("mapped: got %v %v, want 192.168.0.2", got, ok)
	}
	if _, ok := lanIPv4(nil); ok {
		t.Error("no addresses: got one")
	}
}

// FuzzForwardedName feeds arbitrary X-Forwarded-Host values: none may
// panic, and an accepted host must make a URL whose host is exactly it.
func FuzzForwardedName(f *testing.F) {
	for _, s := range []string{"", "homeassistant.local:8123", "192.168.1.10", "[fd00::1]:8123", "a,b", "x.ui.nabu.casa",
		"[::1", "1.2.3", "-a.b", "ä.example", "a..b", "%2f", "host:port:x", "[fe80::1%eth0]:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h, ok := forwardedName(v)
		if !ok {
			return
		}
		u, err := url.Parse("http://" + h + ":8765/mcp")
		if err != nil {
			t.Fatalf("forwardedName(%q) = %q: not a URL host: %v", v, h, err)
		}
		if want := strings.Trim(h, "[]"); u.Hostname() != want {
			t.Fatalf("forwardedName(%q) = %q: URL host %q", v, h, u.Hostname())
		}
		if strings.ContainsAny(h, " \"'<>&/\\@?#%") {
			t.Fatalf("forwardedName(%q) = %q: unsafe character", v, h)
		}
	})
}
