package play

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecode: whatever the page may post, the codec answers with a
// message or an error, never a panic, and the controller takes any
// message it decodes.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"type":"step","unit":"packet","n":3}`, `{"type":"set","key":"ring_size","value":64,"id":2}`,
		`{"type":"room_welcome","you":"student","scenario":{"preset":"default"},"log":[{"seq":1,"cmd":{"type":"step"}}]}`,
		`{"type":"room_command","seq":1,"cmd":{"type":"seek","t_ns":5000}}`, `{"type":"inspect","kind":"page","index":3}`,
		`{"type":"tutorial_step","tutorial":"descriptor-journey","step":1}`, `{"type":"speed","eps":0}`, `[1]`, `{"type":7}`,
		`{"type":"resize","w":640,"h":400}`, `{"type":"view","zoom":"in","pan":-3}`, `{"type":"view","ring":"toggle","from":4,"slots":8}`,
		`{"type":"hover","x":100,"y":80}`, `{"type":"click","x":120,"y":150}`, `{"type":"layout","id":3}`} {
		f.Add([]byte(s))
	}
	c, _ := New("preset=small-ring&speed=0")
	f.Fuzz(func(t *testing.T, raw []byte) {
		in, err := Decode(raw)
		if err != nil {
			require.ErrorIs(t, err, ErrParam)
			return
		}
		c.Handle(in)
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
