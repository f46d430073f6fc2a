package play

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/proto"
	"ringlab/tutorials"
)

// samples is one message of every input, as the page, the room or the
// shell sends it.
var samples = map[string]string{
	"preset":          `{"type":"preset","name":"cpumap"}`,
	"set":             `{"type":"set","key":"ring_size","value":"256"}`,
	"play":            `{"type":"play","speed":10}`,
	"pause":           `{"type":"pause"}`,
	"step":            `{"type":"step","unit":"packet","n":3}`,
	"seek":            `{"type":"seek","t_ns":5000}`,
	"back":            `{"type":"back","unit":"packet","n":3}`,
	"goto":            `{"type":"goto","unit":"ns","n":1000}`,
	"until":           `{"type":"until","func":"virtnet_poll"}`,
	"reset":           `{"type":"reset"}`,
	"tutorial_step":   `{"type":"tutorial_step","tutorial":"xdp","step":2}`,
	"tutorial_reveal": `{"type":"tutorial_reveal","tutorial":"xdp","step":2,"question":0}`,
	"lesson":          `{"type":"lesson","packed":"` + tutorials.PackLesson([]byte(testLesson)) + `"}`,
	"lesson_load":     `{"type":"lesson_load","text":"---\\n","source":"a.md","id":7}`,
	"toggle":          `{"type":"toggle"}`,
	"speed":           `{"type":"speed","eps":100}`,
	"scenario":        `{"type":"scenario","json":"{}","pane":1}`,
	"xdp_object":      `{"type":"xdp_object","name":"x.o","bytes":"f0VMRg==","pane":1}`,
	"pcap":            `{"type":"pcap","name":"c.pcap","bytes":"1MOyoQ==","rate_pps":1000,"pane":1}`,
	"pcap_export":     `{"type":"pcap_export","pane":1,"id":7}`,
	"compare":         `{"type":"compare","on":true}`,
	"load":            `{"type":"load","query":"preset=default"}`,
	"hello":           `{"type":"hello"}`,
	"queue":           `{"type":"queue","queue":1}`,
	"inspect":         `{"type":"inspect","kind":"page","index":3}`,
	"where":           `{"type":"where","kind":"page","index":3,"pane":1}`,
	"click":           `{"type":"click","x":120,"y":150}`,
	"layout":          `{"type":"layout","id":3}`,
	"sync":            `{"type":"sync","id":4}`,
	"digest":          `{"type":"digest","id":5}`,
	"tutorials":       `{"type":"tutorials"}`,
	"tutorial":        `{"type":"tutorial","name":"xdp"}`,
	"tutorial_grade":  `{"type":"tutorial_grade","key":{"subject":"rx_packets","truth":{"Num":3},"truth_text":"3","op":"==","args":[]},"prediction":"3","id":6}`,
	"view":            `{"type":"view","ring":"toggle","from":4,"slots":8}`,
	"hover":           `{"type":"hover","x":100,"y":80}`,
	"resize":          `{"type":"resize","w":640,"h":400}`,
	"motion":          `{"type":"motion","reduced":true}`,
	"welcome": `{"type":"welcome","version":1,"room":"r1","you":"student","scenario":{"preset":"default"},"since":0,"students":1,"instructors":1,` +
		`"limits":{"max_students":100,"commands_per_second":20,"max_log_entries":10000,"max_command_bytes":4096,"max_command_work":1,"max_replay_work":2},"log":[{"seq":1,"cmd":{"type":"step"}}]}`,
	"command":           `{"type":"command","seq":1,"cmd":{"type":"seek","t_ns":5000}}`,
	"beacon":            `{"type":"beacon","seq":3,"t_ns":5000,"digest":"00ff","playing":true,"speed":10}`,
	"room_leave":        `{"type":"room_leave"}`,
	"room_detach":       `{"type":"room_detach"}`,
	"room_snap":         `{"type":"room_snap"}`,
	"room_log":          `{"type":"room_log","id":7}`,
	"room_join":         `{"type":"room_join","room":"r1","role":"student","client":"c1","name":"Ada","resume":true}`,
	"room_dropped":      `{"type":"room_dropped","room":"r1","refused":"not_found"}`,
	"predict":           `{"type":"predict","tutorial":"xdp","step":2,"question":0,"answer":"yes"}`,
	"share_predictions": `{"type":"share_predictions","tutorial":"xdp","step":2,"question":0}`,
	"remove":            `{"type":"remove","client":"c1"}`,
	"presence":          `{"type":"presence","students":3,"instructors":1}`,
	"roster":            `{"type":"roster","seq":4,"roster":[{"client":"c1","name":"Ada","state":"following","applied":4,"step":0,"revealed":false}]}`,
	"predictions":       `{"type":"predictions","questions":[{"tutorial":"xdp","step":2,"question":0,"count":2,"answers":[{"answer":"yes","count":2}]}]}`,
	"class":             `{"type":"class","size":30,"invitation_only":true,"invite":"abc","reserved":31}`,
	"live_hello":        `{"type":"live_hello","source":"host:eth0","counters":["rx_packets"],"labels":{"kind":"host","device":"eth0"},"rate_hz":10}`,
	"live_snapshot":     `{"type":"live_snapshot","seq":1,"t_ms":1780000000000,"counters":{"rx_packets":1}}`,
	"live_status":       `{"type":"live_status","connected":false,"text":"gone"}`,
	"live_off":          `{"type":"live_off"}`,
}

// TestRegistryRoundTrips: every message of the registry goes from its
// name to its Go type and back; every input has a sample the codec reads
// as that type; every room command goes to its canonical form and back;
// every output is written under its name; and the room's messages the
// page sends on (command, beacon) are what the room's socket takes.
func TestRegistryRoundTrips(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Messages() {
		if m.Dir == DirOut {
			o := reflect.New(m.Type).Elem().Interface().(Out)
			assert.Equal(t, m.Name, Type(o), "%v", m.Type)
			b, err := MarshalOut(o)
			require.NoError(t, err, m.Name)
			typ, err := proto.Type(b)
			require.NoError(t, err, "%s", b)
			assert.Equal(t, m.Name, typ, "%s", b)
			continue
		}
		seen[m.Name] = true
		raw, ok := samples[m.Name]
		if !assert.True(t, ok, "input %q has no sample here", m.Name) {
			continue
		}
		in, err := Decode([]byte(raw))
		require.NoError(t, err, raw)
		if r, ok := in.(Request); ok {
			in = r.In
		}
		assert.Equal(t, m.Type, reflect.TypeOf(in), raw)
		assert.Equal(t, m.Name, nameOf(in), raw)
		// The codec is strict for each: a field it does not have is
		// refused, by name.
		var fields map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(raw), &fields))
		fields["no_such_field"] = json.RawMessage(`1`)
		extra, _ := json.Marshal(fields)
		_, err = Decode(extra)
		assert.Equal(t, &proto.Error{Code: proto.CodeUnknownField, Field: "no_such_field", Message: "this message has no such field"}, err, "%s", extra)
		if !m.Command {
			_, err := EncodeCommand(in)
			assert.Error(t, err, "%s is not a command", m.Name)
			continue
		}
		canon, err := EncodeCommand(in)
		require.NoError(t, err, raw)
		again, err := ParseCommand(canon)
		require.NoError(t, err, "%s", canon)
		assert.Equal(t, in, again, "%s", canon)
		canon2, err := EncodeCommand(again)
		require.NoError(t, err)
		assert.Equal(t, string(canon), string(canon2))
	}
	for name := range samples {
		assert.True(t, seen[name], "sample %q is of no input of the registry", name)
	}

	// One beacon, both ways: what an instructor's page sends is what a
	// student's takes once the room relays it.
	out := RoomBeaconOut{Seq: 7, TNs: 1500, Digest: "00ff", Playing: true, Speed: 10}
	b, err := MarshalOut(out)
	require.NoError(t, err)
	in, err := Decode(b)
	require.NoError(t, err, "%s", b)
	assert.Equal(t, RoomBeacon(out), in)
	relayed := proto.MustEncode(proto.TypeBeacon, proto.Beacon(out))
	assert.JSONEq(t, string(b), string(relayed), "the room relays the page's beacon as it is")

	// One command: the page sends the game's on as it is, and the room
	// reads it.
	cmd, err := EncodeCommand(Step{Unit: UnitPacket, N: 3})
	require.NoError(t, err)
	b, err = MarshalOut(RoomSendOut{Cmd: cmd})
	require.NoError(t, err)
	var sent struct {
		Type string `json:"type"`
		proto.Command
	}
	require.NoError(t, proto.Strict(b, &sent), "%s", b)
	assert.Equal(t, proto.TypeCommand, sent.Type)
	assert.JSONEq(t, string(cmd), string(sent.Cmd))

	// A student's status, as the controller writes it, is what the
	// room's socket takes.
	st := RoomStatusOut{State: "following", Applied: 4, Tutorial: "descriptor-journey", Step: 2, Revealed: true}
	b, err = MarshalOut(st)
	require.NoError(t, err)
	var status struct {
		Type string `json:"type"`
		proto.Status
	}
	require.NoError(t, proto.Strict(b, &status), "%s", b)
	assert.Equal(t, proto.TypeStatus, status.Type)
	assert.Equal(t, proto.Status(st), status.Status)

	// The room's welcome and its numbered command, as the server writes
	// them, are the game's inputs.
	w := proto.Welcome{Version: proto.Version, Room: "r1", You: RoleStudent, Scenario: json.RawMessage(`{"preset":"default"}`),
		Log: []proto.Entry{{Seq: 1, Cmd: json.RawMessage(`{"type":"step"}`)}}}
	in, err = Decode(proto.MustEncode(proto.TypeWelcome, w))
	require.NoError(t, err)
	assert.Equal(t, RoomWelcome(w), in)
	e := proto.Entry{Seq: 2, Cmd: cmd}
	in, err = Decode(proto.MustEncode(proto.TypeCommand, e))
	require.NoError(t, err)
	assert.Equal(t, RoomCommand(e), in)
}

// TestRoomCommandsAreMarked: the room's commands are the registry's, in
// its order, and nothing else encodes as one.
func TestRoomCommandsAreMarked(t *testing.T) {
	assert.Equal(t, []string{"preset", "set", "play", "pause", "step", "seek", "back", "goto", "until", "reset", "tutorial_step", "tutorial_reveal", "lesson"}, RoomCommands())
	for _, m := range Messages() {
		if m.Dir == DirIn && !slices.Contains(RoomCommands(), m.Name) {
			_, err := ParseCommand([]byte(samples[m.Name]))
			assert.Equal(t, proto.CodeUnknownType, proto.AsError(err).Code, m.Name)
		}
	}
}

// TestCodecErrorCodes: an unknown type and a malformed message get the
// one set of codes (proto's), from the page's codec, from the room's
// command parser and in the error the controller sends the page.
func TestCodecErrorCodes(t *testing.T) {
	c := New("preset=small-ring&speed=0")
	c.Ready()
	for _, tc := range []struct{ raw, code, field string }{
		{`{"type":"no_such_message"}`, proto.CodeUnknownType, "type"},
		{`{"type":"step"`, proto.CodeBadJSON, ""},
		{`[1]`, proto.CodeBadJSON, ""},
		{`{"type":"step"} {}`, proto.CodeBadJSON, ""},
		{"{\"type\":\"set\",\"key\":\"mtu\",\"value\":\"\xff\"}", proto.CodeBadJSON, ""},
		{`{}`, proto.CodeMissingType, "type"},
		{`{"Type":"step"}`, proto.CodeMissingType, "type"},
		{`{"type":7}`, proto.CodeBadField, "type"},
		{`{"type":"step","n":"3"}`, proto.CodeBadField, "n"},
		{`{"type":"step","N":3}`, proto.CodeUnknownField, "N"},
		{`{"type":"step","n":3,"n":4}`, proto.CodeBadJSON, "n"},
		{`{"type":"step","n":0}`, proto.CodeOutOfRange, "n"},
		{`{"type":"step","n":123456789012345678901234567890}`, proto.CodeOutOfRange, "n"},
		{`{"type":"tutorial_grade","key":{"subject":"x","Subject":"y"},"prediction":"1"}`, proto.CodeUnknownField, "key.Subject"},
	} {
		_, err := Decode([]byte(tc.raw))
		e := proto.AsError(err)
		assert.Equal(t, tc.code, e.Code, "%s: %v", tc.raw, err)
		assert.Equal(t, tc.field, e.Field, "%s: %v", tc.raw, err)
		if !slices.Contains([]string{"tutorial_grade"}, MessageType([]byte(tc.raw))) {
			_, err := ParseCommand([]byte(tc.raw))
			assert.Equal(t, tc.code, proto.AsError(err).Code, "ParseCommand %s: %v", tc.raw, err)
		}
		require.Error(t, c.StepJSON([]byte(tc.raw)))
		sent := c.Ready().Send
		require.NotEmpty(t, sent)
		eo, ok := sent[0].(ErrorOut)
		require.True(t, ok, "%#v", sent[0])
		assert.Equal(t, tc.code, eo.Code, tc.raw)
	}
}

// TestNewerWelcomeRefused: a welcome of a newer protocol than this page's
// is refused with the code "version", in words a person acts on, and the
// page stays out of the room.
func TestNewerWelcomeRefused(t *testing.T) {
	c := New("preset=small-ring&speed=0")
	c.Ready()
	w := proto.Welcome{Version: proto.Version + 1, Room: "r1", You: RoleStudent, Log: []proto.Entry{{Seq: 1, Cmd: json.RawMessage(`{"type":"reset"}`)}}}
	require.Error(t, c.StepJSON(proto.MustEncode(proto.TypeWelcome, w)))
	f := c.Ready()
	var refused *ErrorOut
	for _, o := range f.Send {
		if e, ok := o.(ErrorOut); ok {
			refused = &e
		}
		if s, ok := o.(StateOut); ok {
			assert.Nil(t, s.Room, "in no room")
		}
	}
	require.NotNil(t, refused)
	assert.Equal(t, ErrorOut{Source: proto.TypeWelcome, Code: proto.CodeVersion,
		Message: "version: the room's server speaks version 2 of the room protocol and this page version 1: reload the page to get the server's"}, *refused)

	// The version it speaks, and an older one (a server before versions:
	// none), are followed.
	for _, v := range []int{proto.Version, 0} {
		w.Version = v
		require.NoError(t, c.StepJSON(proto.MustEncode(proto.TypeWelcome, w)), "version %d", v)
		assert.True(t, c.inRoom())
		c.Step(RoomLeave{})
	}
}
