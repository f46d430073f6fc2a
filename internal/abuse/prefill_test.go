package abuse

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ringlab/server/rooms"
)

// prefillLog writes commands into a room's log while its server is down
// (killed), as a long workshop leaves it, and starts the server again: a
// log of target bytes, or of the most entries a room takes. The commands
// are reveals of a tutorial's question, about 80 bytes each, which every
// page applies at no cost.
func prefillLog(t *testing.T, s *server, room createdRoom, target int) int {
	t.Helper()
	require.NotEmpty(t, s.state, "a server with a state directory")
	s.kill()
	st, err := rooms.OpenStore(filepath.Join(s.state, rooms.StoreDir))
	require.NoError(t, err)
	_, err = st.Load()
	require.NoError(t, err)
	cmd := json.RawMessage(`{"type":"tutorial_reveal","tutorial":"descriptor-journey","step":2,"question":0}`)
	n := min(target/len(cmd), rooms.MaxLogEntries)
	cmds := make([]json.RawMessage, n)
	for i := range cmds {
		cmds[i] = cmd
	}
	require.NoError(t, st.AppendLog(room.Room, cmds...))
	require.NoError(t, st.Close())
	s.restart()
	return n * len(cmd)
}
