package proto

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type subscribe struct {
	Type     string   `json:"type"`
	RateHz   *int     `json:"rate_hz"`
	Counters []string `json:"counters"`
	Nested   *struct {
		N int `json:"n"`
	} `json:"nested"`
}

func TestType(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		want      string
		wantCode  string
		wantField string
	}{
		{"object with type", `{"type":"ping"}`, "ping", "", ""},
		{"other fields are not checked here", `{"type":"x","zz":1}`, "x", "", ""},
		{"malformed", `{"type":`, "", CodeBadJSON, ""},
		{"not an object", `[1,2]`, "", CodeBadJSON, ""},
		{"a string", `"ping"`, "", CodeBadJSON, ""},
		{"no type", `{}`, "", CodeMissingType, "type"},
		{"null type", `{"type":null}`, "", CodeMissingType, "type"},
		{"type not a string", `{"type":5}`, "", CodeBadField, "type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Type([]byte(tc.in))
			if tc.wantCode == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				return
			}
			e := AsError(err)
			assert.Equal(t, tc.wantCode, e.Code, e.Message)
			assert.Equal(t, tc.wantField, e.Field)
		})
	}
}

func TestStrict(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantCode  string
		wantField string
		wantText  string
	}{
		{"valid", `{"type":"subscribe","rate_hz":20,"counters":["rx_kicks"]}`, "", "", ""},
		{"string for an integer", `{"type":"subscribe","rate_hz":"20"}`, CodeBadField, "rate_hz", "want an integer, got string"},
		{"fraction for an integer", `{"type":"subscribe","rate_hz":2.5}`, CodeBadField, "rate_hz", "want an integer, got number 2.5"},
		{"number in a string array", `{"type":"subscribe","counters":["a",5]}`, CodeBadField, "counters", "want a string, got number"},
		{"object for an array", `{"type":"subscribe","counters":{}}`, CodeBadField, "counters", "want an array, got object"},
		{"nested field", `{"type":"subscribe","nested":{"n":true}}`, CodeBadField, "nested.n", "want an integer, got bool"},
		{"unknown field", `{"type":"subscribe","rate":20}`, CodeUnknownField, "rate", "no such field"},
		{"trailing data", `{"type":"subscribe"} {"type":"ping"}`, CodeBadJSON, "", "trailing data"},
		{"truncated", `{"type":"subscribe",`, CodeBadJSON, "", "malformed JSON"},
		{"not an object", `[]`, CodeBadJSON, "", "JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m subscribe
			err := Strict([]byte(tc.in), &m)
			if tc.wantCode == "" {
				require.NoError(t, err)
				require.NotNil(t, m.RateHz)
				assert.Equal(t, 20, *m.RateHz)
				return
			}
			e := AsError(err)
			assert.Equal(t, tc.wantCode, e.Code)
			assert.Equal(t, tc.wantField, e.Field)
			assert.Contains(t, e.Message, tc.wantText)
		})
	}
}

func TestErrorEncoding(t *testing.T) {
	e := Errorf(CodeOutOfRange, "rate_hz", "rate_hz must be between %d and %d", 1, 50)
	var got map[string]any
	require.NoError(t, json.Unmarshal(e.Encode(), &got))
	assert.Equal(t, map[string]any{"type": "error", "code": "out_of_range", "field": "rate_hz", "message": "rate_hz must be between 1 and 50"}, got)
	assert.Equal(t, "rate_hz: rate_hz must be between 1 and 50", e.Error())
	assert.Equal(t, "cmd.rate_hz", e.WithFieldPrefix("cmd").Field)
	assert.Equal(t, "cmd", Errorf(CodeBadJSON, "", "x").WithFieldPrefix("cmd").Field)
	assert.Equal(t, "rate_hz", e.Field, "WithFieldPrefix copies")

	wrapped := AsError(errors.Join(errors.New("context"), e))
	assert.Equal(t, CodeOutOfRange, wrapped.Code)
	assert.Equal(t, CodeInternal, AsError(errors.New("plain")).Code)
}

// FuzzDecode checks that no client input panics the decoder and that every
// failure is reported as an Error with a code.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"type":"subscribe","rate_hz":20}`, `{"type":5}`, `[`, `{"nested":{"n":"x"}}`, `{"type":"a"}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Type(data); err != nil {
			require.NotEmpty(t, AsError(err).Code)
			require.NotEqual(t, CodeInternal, AsError(err).Code)
		}
		var m subscribe
		if err := Strict(data, &m); err != nil {
			require.NotEmpty(t, AsError(err).Code)
			require.NotEqual(t, CodeInternal, AsError(err).Code)
		}
	})
}

// TestStrictIsStrict: names match exactly and once, numbers fit.
func TestStrictIsStrict(t *testing.T) {
	tests := []struct {
		name, in, code, field string
	}{
		{"a second type in another case", `{"type":"subscribe","Type":"ping"}`, CodeUnknownField, "Type"},
		{"a name in another case", `{"type":"subscribe","RATE_HZ":20}`, CodeUnknownField, "RATE_HZ"},
		{"a duplicate name", `{"type":"subscribe","rate_hz":1,"rate_hz":20}`, CodeBadJSON, "rate_hz"},
		{"a duplicate name, nested", `{"type":"subscribe","nested":{"n":1,"n":2}}`, CodeBadJSON, "nested.n"},
		{"30 digits", `{"type":"subscribe","rate_hz":123456789012345678901234567890}`, CodeOutOfRange, "rate_hz"},
		{"1e999", `{"type":"subscribe","rate_hz":1e999}`, CodeBadField, "rate_hz"},
		{"invalid UTF-8", "{\"type\":\"subscribe\",\"counters\":[\"\xff\"]}", CodeBadJSON, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m subscribe
			e := AsError(Strict([]byte(tc.in), &m))
			assert.Equal(t, tc.code, e.Code, e.Message)
			assert.Equal(t, tc.field, e.Field, e.Message)
		})
	}
	for in, code := range map[string]string{
		`{"type":"pause","type":"play"}`: CodeBadJSON,
		`{"Type":"play"}`:                CodeMissingType,
		`{"TYPE":"play","type":"x"}`:     "",
	} {
		typ, err := Type([]byte(in))
		if code == "" {
			assert.NoError(t, err, in)
			assert.Equal(t, "x", typ)
			continue
		}
		assert.Equal(t, code, AsError(err).Code, in)
	}
}

// TestStrictNamesEmbeddedFieldsAsSent: a message that embeds proto's
// type (as the servers' do: {type, proto.Join}) names a field of the
// wrong type as the JSON has it, not after the Go type it comes from
// ("Join.role").
func TestStrictNamesEmbeddedFieldsAsSent(t *testing.T) {
	var m struct {
		Type string `json:"type"`
		Join
		Q struct {
			Question
		} `json:"q"`
	}
	e := AsError(Strict([]byte(`{"type":"join","role":5}`), &m))
	assert.Equal(t, CodeBadField, e.Code)
	assert.Equal(t, "role", e.Field)
	e = AsError(Strict([]byte(`{"type":"join","since":-1}`), &m))
	assert.Equal(t, CodeOutOfRange, e.Code)
	assert.Equal(t, "since", e.Field)
	e = AsError(Strict([]byte(`{"type":"join","q":{"step":"two"}}`), &m))
	assert.Equal(t, "q.step", e.Field)
}
