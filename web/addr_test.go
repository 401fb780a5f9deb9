package web

import (
	"net/netip"
	"strings"
	"testing"
)

func TestRefusal(t *testing.T) {
	tests := []struct {
		addr string
		want string // a part of the reason; "" for a public address
	}{
		// IPv4 public, including the edges of refused blocks.
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"93.184.215.14", ""},
		{"9.255.255.255", ""},
		{"11.0.0.0", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"126.255.255.255", ""},
		{"128.0.0.0", ""},
		{"169.253.255.255", ""},
		{"169.255.0.0", ""},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"192.0.1.255", ""},
		{"192.0.3.0", ""},
		{"192.167.255.255", ""},
		{"192.169.0.0", ""},
		{"198.17.255.255", ""},
		{"198.20.0.0", ""},
		{"223.255.255.255", ""},
		// IPv4 refused.
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", `"this network"`},
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"100.64.0.1", "CGNAT"},
		{"100.127.255.255", "CGNAT"},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"169.254.169.254", "link-local"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.0.0.8", "IETF protocol assignment"},
		{"192.0.2.1", "documentation"},
		{"192.88.99.1", "6to4 relay"},
		{"192.168.1.1", "private"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "broadcast"},
		// IPv6 public.
		{"2606:4700:4700::1111", ""},
		{"2001:4860:4860::8888", ""},
		{"2a00:1450:4007:80e::200e", ""},
		{"2001:200::1", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2002:808:808::1", ""},
		// IPv6 refused.
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "IPv4-mapped form of a loopback"},
		{"::ffff:10.0.0.1", "IPv4-mapped form of a private"},
		{"::ffff:169.254.169.254", "IPv4-mapped form of a link-local"},
		{"::ffff:100.64.0.1", "IPv4-mapped form of a shared (CGNAT)"},
		{"::127.0.0.1", "outside global unicast"},
		{"64:ff9b::7f00:1", "NAT64 form of a loopback"},
		{"64:ff9b::a00:1", "NAT64 form of a private"},
		{"64:ff9b::c000:201", "NAT64 form of a documentation"},
		{"64:ff9b:1::1", "outside global unicast"},
		{"100::1", "outside global unicast"},
		{"fc00::1", "private"},
		{"fd12:3456:789a::1", "private"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "scoped"},
		{"febf:ffff::1", "link-local"},
		{"fec0::1", "outside global unicast"},
		{"ff02::1", "multicast"},
		{"ff05::2", "multicast"},
		{"ff0e::1", "multicast"},
		{"2001::1", "IETF protocol assignment"},
		{"2001:2::1", "IETF protocol assignment"},
		{"2001:1ff:ffff::1", "IETF protocol assignment"},
		{"2001:db8::1", "documentation"},
		{"2001:db8:ffff:ffff::1", "documentation"},
		{"3fff::1", "documentation"},
		{"3fff:fff::1", "documentation"},
		{"2002:7f00:1::1", "6to4 form of a loopback"},
		{"2002:c0a8:101::1", "6to4 form of a private"},
		{"2002:a9fe:a9fe::1", "6to4 form of a link-local"},
		{"4000::1", "outside global unicast"},
		{"5f00::1", "outside global unicast"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got := refusal(netip.MustParseAddr(tt.addr))
			if tt.want == "" {
				if got != "" {
					t.Fatalf("refusal(%s) = %q; want a public address", tt.addr, got)
				}
				return
			}
			if !strings.Contains(got, tt.want) {
				t.Fatalf("refusal(%s) = %q; want it to contain %q", tt.addr, got, tt.want)
			}
		})
	}
	if got := refusal(netip.Addr{}); got == "" {
		t.Error("refusal(zero Addr) is empty; want a refusal")
	}
}

func TestControlAddr(t *testing.T) {
	tests := []struct {
		address string
		want    string // part of the error, "" for none
	}{
		{"93.184.215.14:443", ""},
		{"[2606:4700:4700::1111]:443", ""},
		{"127.0.0.1:80", "loopback"},
		{"[::1]:80", "loopback"},
		{"[::ffff:10.1.2.3]:80", "private"},
		{"[fe80::1%lo]:80", "scoped"},
		{"example.com:80", "not an IP address"},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			err := controlAddr("tcp", tt.address, nil)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("controlAddr(%s) = %v; want nil", tt.address, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("controlAddr(%s) = %v; want an error containing %q", tt.address, err, tt.want)
			}
		})
	}
}
