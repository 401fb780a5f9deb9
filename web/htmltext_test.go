package web

import (
	"net/url"
	"testing"
)

func TestHTMLText(t *testing.T) {
	base, _ := url.Parse("https://example.org/docs/page.html")
	tests := []struct {
		name, html, title, text string
	}{
		{"empty", "", "", ""},
		{"plain words", "just   some\n\ttext ", "", "just some text"},
		{"entities", "<p>a &amp; b &lt;c&gt; &eacute;&#x2019;</p>", "", "a & b <c> é’"},
		{"inline markup joins words", "<p>un<b>bold</b>ed <i>and</i> <em>spaced</em></p>", "", "unbolded and spaced"},
		{"paragraphs", "<p>one</p><p>two</p>", "", "one\n\ntwo"},
		{"divs and br", "<div>a</div><div>b<br>c<br><br><br>d</div>", "", "a\nb\nc\n\nd"},
		{"headings", "<h2>Install</h2><p>run it</p><h3> Notes </h3>", "", "## Install\n\nrun it\n\n### Notes"},
		{"lists", "<ul><li>one</li><li> two <b>2</b></li></ul><p>after</p>", "", "- one\n- two 2\n\nafter"},
		{"table", "<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>", "", "k | v\na | 1"},
		{"pre keeps whitespace", "<p>x</p><pre>  a\n    b</pre><p>y</p>", "", "x\n\n  a\n    b\n\ny"},
		{"relative link", `see <a href="other.html#s">the other page</a>.`, "", "see [the other page](https://example.org/docs/other.html#s)."},
		{"root and absolute links", `<a href="/">home</a> <a href="http://go.dev/x">go</a>`, "", "[home](https://example.org/) [go](http://go.dev/x)"},
		{"links without a web target keep their text", `<a href="#top">top</a> <a href="mailto:a@b.c">mail</a> <a href="javascript:void(0)">js</a> <a>none</a>`, "", "top mail js none"},
		{"empty link", `<a href="/x"></a>after`, "", "after"},
		{"image alt", `<a href="/logo"><img src="l.png" alt="Logo"></a>`, "", "[Logo](https://example.org/logo)"},
		{"dropped elements", "<script>var x = '<p>no</p>';</script><style>p{}</style><noscript>no</noscript><template><p>no</p></template><svg><svg><text>no</text></svg><title>no</title></svg><select><option>no</option></select>yes", "", "yes"},
		{"title", "<html><head><title>\n A  &amp; B </title></head><body>body</body></html>", "A & B", "body"},
		{"malformed", "<p>open <b>bold <p>next</i> end", "", "open bold\n\nnext end"},
		{"unclosed skip drops the rest", "<p>kept</p><script>never closed", "", "kept"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			title, text := htmlText([]byte(tt.html), base)
			if title != tt.title || text != tt.text {
				t.Errorf("htmlText(%q) =\n%q, %q\nwant\n%q, %q", tt.html, title, text, tt.title, tt.text)
			}
		})
	}
}

func TestPlainText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"no markup  here", "no markup here"},
		{"The <strong>Go</strong> language", "The Go language"},
		{"you&#x27;ll &amp; we", "you'll & we"},
		{"a <b>b</b>\n c", "a b c"},
	}
	for _, tt := range tests {
		if got := plainText(tt.in); got != tt.want {
			t.Errorf("plainText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
