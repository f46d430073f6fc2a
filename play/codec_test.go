package play

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ringlab/proto"
)

// FuzzDecode: whatever the page may post, the codec answers with a
// message or an error, never a panic; the controller takes any message
// it decodes, and answers one it does not with an error in its Ready.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"type":"step","unit":"packet","n":3}`, `{"type":"set","key":"ring_size","value":64,"id":2}`,
		`{"type":"welcome","you":"student","scenario":{"preset":"default"},"log":[{"seq":1,"cmd":{"type":"step"}}]}`,
		`{"type":"command","seq":1,"cmd":{"type":"seek","t_ns":5000}}`, `{"type":"inspect","kind":"page","index":3}`,
		`{"type":"tutorial_step","tutorial":"descriptor-journey","step":1}`, `{"type":"speed","eps":0}`, `[1]`, `{"type":7}`,
		`{"type":"resize","w":640,"h":400}`, `{"type":"view","zoom":"in","pan":-3}`, `{"type":"view","ring":"toggle","from":4,"slots":8}`,
		`{"type":"hover","x":100,"y":80}`, `{"type":"click","x":120,"y":150}`, `{"type":"layout","id":3}`} {
		f.Add([]byte(s))
	}
	c := New("preset=small-ring&speed=0")
	c.Ready() // the greeting
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, err := Decode(raw)
		if err != nil {
			require.ErrorIs(t, err, proto.ErrInvalid)
			require.Equal(t, err, c.StepJSON(raw))
			sent := c.Ready().Send
			require.NotEmpty(t, sent)
			e, ok := sent[0].(ErrorOut)
			require.True(t, ok, "%#v", sent[0])
			require.Equal(t, err.Error(), e.Message)
			return
		}
		c.Step(in)
		c.Tick(1e6)
		for i := 0; i < 64 && c.Work(64); i++ {
		}
		c.Ready()
	})
}

// FuzzParseCommand: a room command that parses has a canonical form that
// parses to the same command and encodes to itself.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{`{"type":"set","key":"mtu","value":-1.5e3}`, `{"type":"step","unit":"ns","n":5}`, `{"type":"play","speed":2.5}`,
		`{"type":"tutorial_reveal","tutorial":"xdp","step":2,"question":0}`, `{"type":"seek","t_ns":0}`, `{"type":"preset","name":"cpumap"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, err := ParseCommand(raw)
		if err != nil {
			return
		}
		canon, err := EncodeCommand(in)
		require.NoError(t, err)
		again, err := ParseCommand(canon)
		require.NoError(t, err, "%s", canon)
		require.Equal(t, in, again)
		canon2, err := EncodeCommand(again)
		require.NoError(t, err)
		require.Equal(t, string(canon), string(canon2))
	})
}

// TestParseCommandIsStrict: a room command's names match exactly and
// once, at any depth, and a number value fits what a browser holds; the
// loose readings encoding/json allows are refused, never logged.
func TestParseCommandIsStrict(t *testing.T) {
	for _, tc := range []struct{ in, code, field string }{
		{`{"type":"pause","Type":"play"}`, proto.CodeUnknownField, "Type"},
		{`{"Type":"play"}`, proto.CodeMissingType, "type"},
		{`{"type":"pause","type":"play"}`, proto.CodeBadJSON, "type"},
		{`{"type":"set","key":"mtu","value":"9000","Key":"ring_size"}`, proto.CodeUnknownField, "Key"},
		{`{"type":"set","key":"mtu","value":1e999}`, proto.CodeOutOfRange, "value"},
		{`{"type":"set","key":"mtu","value":123456789012345678901234567890}`, proto.CodeOutOfRange, "value"},
		{`{"type":"set","key":"mtu","value":9007199254740993}`, proto.CodeOutOfRange, "value"},
		{`{"type":"step","n":123456789012345678901234567890}`, proto.CodeOutOfRange, "n"},
		{`{"type":"seek","t_ns":1e999}`, proto.CodeBadField, "t_ns"},
	} {
		_, err := ParseCommand([]byte(tc.in))
		require.Error(t, err, tc.in)
		ce, ok := err.(*proto.Error)
		require.True(t, ok, "%s: %v", tc.in, err)
		require.Equal(t, tc.code, ce.Code, "%s: %v", tc.in, err)
		require.Equal(t, tc.field, ce.Field, "%s: %v", tc.in, err)
	}
	_, err := ParseCommand([]byte(`{"type":"set","key":"mtu","value":9007199254740992}`))
	require.NoError(t, err, "2^53 itself")
	// Duplicates deeper down are refused in the page's messages too.
	_, err = Decode([]byte(`{"type":"command","seq":1,"cmd":{"type":"step","type":"seek"}}`))
	require.Error(t, err)
}
