package rooms

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storeWith writes rooms a, b and c with three commands each, closes the
// store and returns its directory.
func storeWith(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), StoreDir)
	st, err := OpenStore(dir)
	require.NoError(t, err)
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, st.Create(StoredRoom{ID: id, Scenario: json.RawMessage(`{"preset":"default"}`), Created: time.Unix(1, 0)}))
		for seq := uint64(1); seq <= 3; seq++ {
			require.NoError(t, st.Append(id, Entry{Seq: seq, Cmd: json.RawMessage(`{"type":"step","n":5}`)}, time.Unix(int64(seq)+1, 0)))
		}
	}
	require.NoError(t, st.Close())
	return dir
}

func loadStore(t testing.TB, dir string) Loaded {
	t.Helper()
	st, err := OpenStore(dir)
	require.NoError(t, err)
	defer st.Close()
	l, err := st.Load()
	require.NoError(t, err)
	return l
}

func ids(l Loaded) []string {
	var out []string
	for _, r := range l.Rooms {
		out = append(out, r.ID)
	}
	return out
}

// TestStoreSetsDamagedRoomAside: each kind of damage to one room's file
// takes that room down only; its file is kept under another name, and
// the report names it.
func TestStoreSetsDamagedRoomAside(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"a byte flipped in a command": func(b []byte) []byte { b[len(b)-3] ^= 0x40; return b },
		"a byte flipped in the room":  func(b []byte) []byte { b[12] ^= 0x01; return b },
		"truncated to 0 bytes":        func([]byte) []byte { return nil },
		"a length past any record":    func(b []byte) []byte { b[0] = 0xff; return b },
		"garbage":                     func(b []byte) []byte { return []byte(strings.Repeat("\x00\xff", 300)) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := storeWith(t)
			path := filepath.Join(dir, "b"+roomSuffix)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, damage(b), 0o600))
			l := loadStore(t, dir)
			assert.ElementsMatch(t, []string{"a", "c"}, ids(l), "the other rooms load")
			require.Len(t, l.SetAside, 1)
			d := l.SetAside[0]
			assert.False(t, d.Restored)
			assert.Equal(t, path, d.File)
			assert.FileExists(t, d.Kept, "the damaged file is kept")
			assert.NoFileExists(t, path, "and out of the store's way")
			// Started again, the store has the two rooms and nothing to report.
			l = loadStore(t, dir)
			assert.ElementsMatch(t, []string{"a", "c"}, ids(l))
			assert.Empty(t, l.SetAside)
		})
	}
}

// TestStoreRepairsATornEnd: a file that ends inside its last record (a
// write a crash cut short) keeps the commands before it, says so, and
// keeps a copy of the file as it was; numbering goes on after them.
func TestStoreRepairsATornEnd(t *testing.T) {
	dir := storeWith(t)
	path := filepath.Join(dir, "b"+roomSuffix)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b[:len(b)-4], 0o600))
	st, err := OpenStore(dir)
	require.NoError(t, err)
	defer st.Close()
	l, err := st.Load()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "b", "c"}, ids(l))
	require.Len(t, l.SetAside, 1)
	d := l.SetAside[0]
	assert.True(t, d.Restored)
	assert.Equal(t, 2, d.Commands)
	kept, err := os.ReadFile(d.Kept)
	require.NoError(t, err)
	assert.Equal(t, b[:len(b)-4], kept, "the file as it was is kept")
	require.NoError(t, st.Append("b", Entry{Seq: 3, Cmd: json.RawMessage(`{"type":"pause"}`)}, time.Now()))
}

// TestStoreSetsAsideACommandThatIsNotJSON: a command the welcome could
// not carry (it once made every join of its room panic) is damage.
func TestStoreSetsAsideACommandThatIsNotJSON(t *testing.T) {
	dir := storeWith(t)
	st, err := OpenStore(dir)
	require.NoError(t, err)
	_, err = st.Load()
	require.NoError(t, err)
	require.NoError(t, st.AppendLog("c", json.RawMessage(`{"type":`)))
	require.NoError(t, st.Close())
	l := loadStore(t, dir)
	assert.ElementsMatch(t, []string{"a", "b"}, ids(l))
	require.Len(t, l.SetAside, 1)
	assert.Contains(t, l.SetAside[0].Reason, "command 4 is not JSON")
}

// TestStoreIgnoresACreateCutShort: a room file still under its temporary
// name was never acknowledged; it is removed.
func TestStoreIgnoresACreateCutShort(t *testing.T) {
	dir := storeWith(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d"+roomSuffix+".tmp"), []byte("half"), 0o600))
	l := loadStore(t, dir)
	assert.Len(t, l.Rooms, 3)
	assert.Empty(t, l.SetAside)
	assert.NoFileExists(t, filepath.Join(dir, "d"+roomSuffix+".tmp"))
}

// FuzzParseRoomFile: no bytes make the parser panic; what it accepts is
// a room with a log numbered from 1 whose commands are JSON, and it
// reads the same again when written back.
func FuzzParseRoomFile(f *testing.F) {
	dir := storeWith(f)
	b, err := os.ReadFile(filepath.Join(dir, "a"+roomSuffix))
	require.NoError(f, err)
	f.Add(b)
	f.Add(b[:len(b)-1])
	f.Add([]byte{})
	f.Add(frame(nil, []byte(`R{"id":"x"}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		room, log, good, err := parseRoomFile(data)
		require.LessOrEqual(t, good, len(data))
		if err != nil {
			return
		}
		require.Equal(t, len(data), good)
		for i, e := range log {
			require.Equal(t, uint64(i+1), e.Seq)
			require.True(t, json.Valid(e.Cmd))
		}
		require.True(t, roomPattern.MatchString(room.ID))
	})
}

// FuzzStoreLoad: any bytes as one room's file leave the other rooms
// loaded, and the file either loads or is set aside; the store loads
// cleanly the next time.
func FuzzStoreLoad(f *testing.F) {
	seed := storeWith(f)
	files := map[string][]byte{}
	for _, id := range []string{"a", "b", "c"} {
		b, err := os.ReadFile(filepath.Join(seed, id+roomSuffix))
		require.NoError(f, err)
		files[id] = b
	}
	f.Add(files["b"])
	f.Add(files["b"][:17])
	f.Add([]byte("\x00\x00\x00\x01\x00\x00\x00\x00R"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		for id, b := range files {
			if id == "b" {
				b = data
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, id+roomSuffix), b, 0o600))
		}
		l := loadStore(t, dir)
		got := ids(l)
		assert.Subset(t, got, []string{"a", "c"})
		assert.LessOrEqual(t, len(got)+len(l.SetAside), 4)
		again := loadStore(t, dir)
		assert.Equal(t, len(got), len(again.Rooms))
		assert.Empty(t, again.SetAside)
	})
}

// FuzzReplicaBuild: a stored log of any commands (JSON, as the store
// lets through) replays on a replica or is refused with an error, never
// a panic: the log replay a restart does.
func FuzzReplicaBuild(f *testing.F) {
	f.Add(`{"preset":"default"}`, "{\"type\":\"step\",\"n\":5}\n{\"type\":\"pause\"}")
	f.Add(`{"preset":"xdp-drop"}`, "{\"type\":\"seek\",\"t_ns\":4611686018427387904}")
	f.Add(``, "{\"type\":\"set\",\"key\":\"ring_size\",\"value\":\"64\"}\n[]\n7")
	f.Add(`{"preset":"default"}`, "{\"type\":\"tutorial_step\",\"tutorial\":\"descriptor-journey\",\"step\":3}")
	lim := Limits{MaxReplayWork: 200_000, MaxCommandWork: 100_000}.withDefaults()
	f.Fuzz(func(t *testing.T, scenario, cmds string) {
		if scenario != "" && !json.Valid([]byte(scenario)) {
			return
		}
		var log []Entry
		for _, c := range strings.Split(cmds, "\n") {
			if json.Valid([]byte(c)) {
				log = append(log, Entry{Seq: uint64(len(log) + 1), Cmd: json.RawMessage(c)})
			}
		}
		rm := newRoom(StoredRoom{ID: "f", Scenario: json.RawMessage(scenario)}, lim, time.Now())
		rm.log = log
		newReplicaPool(1<<30).build(rm, &replica{}, "f", lim) // an error is an answer; a panic fails
	})
}
