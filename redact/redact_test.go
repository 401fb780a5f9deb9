package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

const (
	apiKey   = "sk-live-0123456789abcdef"
	password = "hunter2hunter2"
	digits   = "31415926535"
)

func testRedactor() *Redactor { return New([]string{apiKey, password, digits}) }

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		want    []string
	}{
		{"nil", nil, []string{}},
		{"short and empty values ignored", []string{"", "short", "1234567"}, []string{}},
		{"eight bytes kept", []string{"12345678"}, []string{"12345678"}},
		{"duplicates dropped", []string{password, password, apiKey, password}, []string{apiKey, password}},
		{"longest first", []string{"abcdefgh", "abcdefghijkl", "abcdefghij"}, []string{"abcdefghijkl", "abcdefghij", "abcdefgh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.secrets).secrets; !slices.Equal(got, tt.want) {
				t.Errorf("New(%q).secrets = %q, want %q", tt.secrets, got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"no secrets", nil, "token " + password, "token " + password},
		{"whole value", []string{password}, password, Marker},
		{"inside a longer string", []string{apiKey}, "Authorization: Bearer " + apiKey + ".", "Authorization: Bearer " + Marker + "."},
		{"every occurrence", []string{password}, password + " and " + password, Marker + " and " + Marker},
		{"short value ignored", []string{"hunter2"}, "hunter2", "hunter2"},
		{"longer value wins", []string{"abcdefgh", "abcdefghijkl"}, "xabcdefghijkly", "x" + Marker + "y"},
		{"overlapping values merge", []string{"AAAABBBBCC", "BBBBCCCCDD"}, "xAAAABBBBCCCCDDy", "x" + Marker + "y"},
		{"self-overlapping value", []string{"aaaaaaaa"}, "aaaaaaaaaa", Marker},
		{"adjacent values", []string{"AAAAAAAA", "BBBBBBBB"}, "AAAAAAAABBBBBBBB", Marker + Marker},
		{"multibyte", []string{"clé-secrète"}, "«clé-secrète»", "«" + Marker + "»"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.secrets).String(tt.in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNilRedactor(t *testing.T) {
	var r *Redactor
	if got := r.String(password); got != password {
		t.Errorf("String = %q, want it unchanged", got)
	}
	if got, want := string(r.JSON([]byte(`{"token":"x","a":"y"}`))), `{"token":"[REDACTED]","a":"y"}`; got != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "credential fields of every type",
			in:   `{"api_key":"abc","Authorization":"Bearer abc","x-api-key":123,"password":null,"Client.Secret":true,"token":{"a":[1,2]},"set-cookie":["a","b"],"apiKey":"abc","AWS_SECRET_ACCESS_KEY":"abc","private_key":"-----BEGIN"}`,
			want: `{"api_key":"[REDACTED]","Authorization":"[REDACTED]","x-api-key":"[REDACTED]","password":"[REDACTED]","Client.Secret":"[REDACTED]","token":"[REDACTED]","set-cookie":"[REDACTED]","apiKey":"[REDACTED]","AWS_SECRET_ACCESS_KEY":"[REDACTED]","private_key":"[REDACTED]"}`,
		},
		{
			name: "names that only contain a credential word",
			in:   `{"max_tokens":5,"token_count":3,"secret_name":"n","pwd":"/home","keys":["token"]}`,
			want: `{"max_tokens":5,"token_count":3,"secret_name":"n","pwd":"/home","keys":["token"]}`,
		},
		{
			name: "nested arrays and objects",
			in:   `{"a":[{"b":{"password":"p","c":"` + password + `"}},["` + apiKey + `",[{"refresh_token":"r"}]]]}`,
			want: `{"a":[{"b":{"password":"[REDACTED]","c":"[REDACTED]"}},["[REDACTED]",[{"refresh_token":"[REDACTED]"}]]]}`,
		},
		{
			name: "secret inside a longer string",
			in:   `{"msg":"export KEY=` + apiKey + `; echo ok"}`,
			want: `{"msg":"export KEY=[REDACTED]; echo ok"}`,
		},
		{
			name: "secret written with JSON escapes",
			in:   `{"msg":"\u0073k-live-0123456789\u0061bcdef","path":"hunter2\/hunter2"}`,
			want: `{"msg":"[REDACTED]","path":"hunter2/hunter2"}`,
		},
		{
			name: "secret spread over an escaped key and value",
			in:   `{"api\u005fkey":"v","hunter2\u0068unter2":1}`,
			want: `{"api_key":"[REDACTED]","[REDACTED]":1}`,
		},
		{
			name: "numbers keep their literal",
			in:   `{"a":1.50,"b":1e+10,"c":-0,"d":12345678901234567890123,"e":0.1E-3,"f":[1.0,2]}`,
			want: `{"a":1.50,"b":1e+10,"c":-0,"d":12345678901234567890123,"e":0.1E-3,"f":[1.0,2]}`,
		},
		{
			name: "number holding a secret",
			in:   `{"n":3141592653589,"m":314159265}`,
			want: `{"n":"[REDACTED]","m":314159265}`,
		},
		{
			name: "key order and duplicate keys",
			in:   `{"z":1,"a":2,"m":{"y":true,"b":false},"a":3}`,
			want: `{"z":1,"a":2,"m":{"y":true,"b":false},"a":3}`,
		},
		{
			name: "schema properties keep credential-like names",
			in:   `{"type":"object","properties":{"token":{"type":"string","description":"not ` + password + `"},"password":{"type":"string"}},"required":["token","password"]}`,
			want: `{"type":"object","properties":{"token":{"type":"string","description":"not [REDACTED]"},"password":{"type":"string"}},"required":["token","password"]}`,
		},
		{
			name: "nested schema properties",
			in:   `{"properties":{"auth":{"type":"object","properties":{"api_key":{"type":"string"}}}}}`,
			want: `{"properties":{"auth":{"type":"object","properties":{"api_key":{"type":"string"}}}}}`,
		},
		{
			name: "credential field below a property is masked",
			in:   `{"properties":{"token":{"password":"p"}}}`,
			want: `{"properties":{"token":{"password":"[REDACTED]"}}}`,
		},
		{
			name: "properties that is not an object",
			in:   `{"properties":["` + password + `",{"token":"t"}]}`,
			want: `{"properties":["[REDACTED]",{"token":"[REDACTED]"}]}`,
		},
		{
			name: "top-level string",
			in:   `"` + password + `"`,
			want: `"[REDACTED]"`,
		},
		{
			name: "top-level scalars in an array",
			in:   `[42,true,false,null,"x"]`,
			want: `[42,true,false,null,"x"]`,
		},
		{
			name: "white space removed",
			in:   " {\n \"a\" : [ 1 , 2 ] ,\t\"b\" : { } , \"c\" : [ ] }\n",
			want: `{"a":[1,2],"b":{},"c":[]}`,
		},
		{
			name: "escapes re-encoded, HTML left alone",
			in:   `{"a":"<b> & \"q\" \\ \n\r\t\u0001\u2028\u00e9"}`,
			want: `{"a":"<b> & \"q\" \\ \n\r\t\u0001\u2028é"}`,
		},
		{
			name: "invalid JSON: unterminated",
			in:   `{"api_key": "` + password + `"`,
			want: `{"api_key": "[REDACTED]"`,
		},
		{
			name: "invalid JSON: plain text",
			in:   "password=" + password,
			want: "password=" + Marker,
		},
		{
			name: "invalid JSON: two values",
			in:   `{"token":"t"} {"token":"u"}`,
			want: `{"token":"t"} {"token":"u"}`,
		},
		{
			name: "invalid JSON: trailing comma",
			in:   `{"token":"t",}`,
			want: `{"token":"t",}`,
		},
		{
			name: "invalid JSON: empty",
			in:   ``,
			want: ``,
		},
	}
	r := testRedactor()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(r.JSON([]byte(tt.in)))
			if got != tt.want {
				t.Errorf("JSON(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
			if json.Valid([]byte(tt.in)) != json.Valid([]byte(got)) {
				t.Errorf("validity changed: in %v, out %v", json.Valid([]byte(tt.in)), json.Valid([]byte(got)))
			}
		})
	}
}

func TestJSONInvalidUTF8AfterMasking(t *testing.T) {
	// A secret that ends inside a multi-byte character leaves the rest of
	// the character behind; each stray byte becomes U+FFFD.
	r := New([]string{"abcdefg\xe2"})
	got := string(r.JSON([]byte(`{"a":"abcdefg€!"}`)))
	if want := `{"a":"[REDACTED]` + "\uFFFD\uFFFD" + `!"}`; got != want {
		t.Errorf("JSON = %q, want %q", got, want)
	}
}

func TestJSONDepthMatchesEncodingJSON(t *testing.T) {
	nested := func(prefix string, n int) []byte {
		return []byte(prefix + strings.Repeat("[", n) + strings.Repeat("]", n) + strings.Repeat("}", strings.Count(prefix, "{")))
	}
	tests := []struct {
		name string
		doc  []byte
	}{
		{"arrays at the limit", nested("", maxDepth)},
		{"arrays past the limit", nested("", maxDepth+1)},
		{"credential value at the limit", nested(`{"token":`, maxDepth-1)},
		{"credential value past the limit", nested(`{"token":`, maxDepth)},
	}
	r := testRedactor()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.json(tt.doc)
			if valid := json.Valid(tt.doc); (err == nil) != valid {
				t.Errorf("json: err = %v, but json.Valid = %v", err, valid)
			}
		})
	}
}

func TestCredentialField(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"api_key", true}, {"API-KEY", true}, {"apiKey", true}, {"x-api-key", true},
		{"authorization", true}, {"Proxy-Authorization", true}, {"password", true},
		{"passwd", true}, {"secret", true}, {"client_secret", true}, {"token", true},
		{"access_token", true}, {"refresh_token", true}, {"id_token", true},
		{"bearer", true}, {"private_key", true}, {"cookie", true}, {"Set-Cookie", true},
		{"session_token", true}, {"aws_secret_access_key", true}, {"api-key", true},
		{"Ocp-Apim-Subscription-Key", true}, {"credentials", true},
		{"", false}, {"key", false}, {"tokens", false}, {"max_tokens", false},
		{"token_count", false}, {"secret_name", false}, {"pwd", false}, {"author", false},
	}
	for _, tt := range tests {
		if got := CredentialField(tt.key); got != tt.want {
			t.Errorf("CredentialField(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestSecrets(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    []string
	}{
		{
			name: "suffixes and named variables",
			environ: []string{
				"OPENAI_API_KEY=sk-openai-1", "BRAVE_SEARCH_API_KEY=brave-1", "GITHUB_TOKEN=ghp_1",
				"GH_TOKEN=gho_1", "OPENROUTER_API_KEY=or-1", "DB_PASSWORD=pw-1", "WEBHOOK_SECRET=wh-1",
				"AWS_SECRET_ACCESS_KEY=aws-1", "lower_token=low-1",
			},
			want: []string{"sk-openai-1", "brave-1", "ghp_1", "gho_1", "or-1", "pw-1", "wh-1", "aws-1", "low-1"},
		},
		{
			name:    "other variables ignored",
			environ: []string{"HOME=/root", "PATH=/bin", "TOKEN_FILE=/x", "SECRETS_DIR=/y", "API_KEY_ID=1", "TOKEN=bare"},
			want:    nil,
		},
		{
			name:    "empty values, repeats and malformed entries",
			environ: []string{"A_TOKEN=", "B_TOKEN=same", "C_TOKEN=same", "D_TOKEN", "E_TOKEN=a=b"},
			want:    []string{"same", "a=b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Secrets(tt.environ); !slices.Equal(got, tt.want) {
				t.Errorf("Secrets = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCodec(t *testing.T) {
	type request struct {
		APIKey string `json:"api_key"`
		Prompt string `json:"prompt"`
		Count  int    `json:"count"`
	}
	r := testRedactor()
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), r.Codec())

	in := request{APIKey: "plain-key-value", Prompt: "use " + apiKey + " please", Count: 7}
	p, err := dc.ToPayload(in)
	if err != nil {
		t.Fatalf("ToPayload: %v", err)
	}
	for _, leak := range []string{apiKey, "plain-key-value"} {
		if bytes.Contains(p.GetData(), []byte(leak)) {
			t.Errorf("encoded payload %s contains %q", p.GetData(), leak)
		}
	}
	var out request
	if err := dc.FromPayload(p, &out); err != nil {
		t.Fatalf("FromPayload: %v", err)
	}
	if want := (request{APIKey: Marker, Prompt: "use " + Marker + " please", Count: 7}); out != want {
		t.Errorf("round trip = %+v, want %+v", out, want)
	}

	// Binary payloads pass unchanged.
	bin, err := dc.ToPayload([]byte(password))
	if err != nil {
		t.Fatalf("ToPayload(bytes): %v", err)
	}
	if string(bin.GetData()) != password {
		t.Errorf("binary payload data = %q, want it unchanged", bin.GetData())
	}
}

func TestCodecLeavesInputsAlone(t *testing.T) {
	orig := []byte(`{"token":"t"}`)
	in := []*commonpb.Payload{
		{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)}, Data: bytes.Clone(orig)},
		{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("json/protobuf")}, Data: bytes.Clone(orig)},
		{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingNil)}},
	}
	c := testRedactor().Codec()
	out, err := c.Encode(in)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if got := string(out[0].GetData()); got != `{"token":"[REDACTED]"}` {
		t.Errorf("json/plain payload = %s", got)
	}
	if !bytes.Equal(in[0].GetData(), orig) {
		t.Errorf("input payload modified to %s", in[0].GetData())
	}
	if out[1] != in[1] || out[2] != in[2] {
		t.Errorf("non-JSON payloads replaced")
	}
	dec, err := c.Decode(out)
	if err != nil || !slices.Equal(dec, out) {
		t.Errorf("Decode = %v, %v; want the identity", dec, err)
	}
}

// FuzzJSON checks that valid input gives valid, stable output and that no
// configured secret survives, whether the input is valid JSON or not.
func FuzzJSON(f *testing.F) {
	for _, seed := range []string{
		`{"api_key":"x","a":[1,2.50,{"b":"` + password + `"}]}`,
		`{"properties":{"token":{"type":"string"}},"token":"t"}`,
		`"\u0073k-live-0123456789abcdef"`,
		`[3141592653589, -0.0e1, null, true]`,
		`{"a":"<\u2028\ud800>"}`,
		`not json ` + apiKey,
		`{"x":`,
	} {
		f.Add([]byte(seed), "")
		f.Add([]byte(seed), "0123456789")
	}
	f.Fuzz(func(t *testing.T, doc []byte, extra string) {
		secrets := []string{apiKey, password, digits}
		// A value made of the marker's own characters would show up in
		// every masked output; real credentials have no brackets.
		if len(extra) >= MinSecretLen && !strings.ContainsAny(extra, "[]") && extra != "REDACTED" {
			secrets = append(secrets, extra)
		}
		r := New(secrets)
		out := r.JSON(doc)
		_, err := r.json(doc)
		if valid := json.Valid(doc); (err == nil) != valid {
			t.Fatalf("json err = %v, json.Valid = %v for %q", err, valid, doc)
		}
		if err != nil {
			for _, s := range secrets {
				if bytes.Contains(out, []byte(s)) {
					t.Fatalf("secret %q survives in %q (invalid input %q)", s, out, doc)
				}
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q for valid input %q", out, doc)
		}
		if again := r.JSON(out); !bytes.Equal(again, out) {
			t.Fatalf("not stable: %q then %q", out, again)
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("read output %q: %v", out, err)
			}
			var text string
			switch v := tok.(type) {
			case string:
				text = v
			case json.Number:
				text = string(v)
			default:
				continue
			}
			for _, s := range secrets {
				if strings.Contains(text, s) {
					t.Fatalf("secret %q survives in %q (input %q)", s, text, doc)
				}
			}
		}
	})
}
