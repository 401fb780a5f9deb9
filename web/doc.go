// Package web runs the two web tools of axlr for a model: web_fetch, which
// GETs one public http or https URL and returns its body as text, and
// web_search, which asks a search service for a query and returns titles,
// URLs and snippets.
//
// # Safety rules
//
// Every request, including each hop of a redirect and the search services'
// own requests, goes through one transport that keeps these rules:
//
//   - Pinned DNS. The host name is resolved once per connection; every
//     resolved address is checked, and the connection goes to exactly a
//     checked address, so no second resolution can slip between the check and
//     the connect (DNS rebinding). If any address of a name is refused, the
//     whole name is. The production dialer checks the socket's address once
//     more just before it connects.
//   - Public addresses only. Refused: unspecified, loopback, private
//     (RFC 1918, fc00::/7), link-local, multicast, shared (CGNAT,
//     100.64.0.0/10), benchmarking, documentation, IETF protocol assignments,
//     "this network", reserved (240.0.0.0/4 and broadcast), IPv6 outside
//     global unicast (2000::/3), Teredo, and IPv4-mapped, NAT64 (64:ff9b::/96)
//     and 6to4 (2002::/16) addresses whose embedded IPv4 address is refused.
//   - Redirects are followed at most 5 times for web_fetch, each hop checked
//     again (scheme http or https, no user:password@, public address); the
//     search services' redirects are not followed, so their API key never
//     travels to another host.
//   - No ambient credentials: no cookie jar, no proxy from the environment,
//     no netrc, no client certificates, and no Authorization header; a URL
//     with user information is refused, and a redirected request carries no
//     Referer.
//   - Bounded: one time limit covers a whole call (Options.Timeout, default
//     30s), at most Options.MaxBytes of a response body are read (default
//     1 MiB, after decompression), response headers are capped at 64 KiB.
//     A body cut at the limit is reported, never silently.
//
// web_search uses the Brave Search API when Options.BraveKey is set and the
// keyless DuckDuckGo Instant Answers API otherwise. The key is a secret: it
// is replaced by redact.Marker in every result and error the package returns,
// no message carries a request URL or header holding it, and Secrets returns
// it so the host can register it with its redactor.
//
// The package leaves to its caller whether a model may use the tools at all,
// approvals, egress policy beyond these address rules, and recording results.
// It reads no environment variable itself (OptionsFromEnv reads a given one)
// and logs nothing.
package web
