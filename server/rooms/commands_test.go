package rooms

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"ringlab/play"
	"ringlab/proto"
)

// TestRoomTakesTheRegistrysCommands: the commands a room numbers are the
// registry's room commands, no more and no fewer: every other message of
// the page is an unknown command to it.
func TestRoomTakesTheRegistrysCommands(t *testing.T) {
	var taken []string
	for _, m := range play.Messages() {
		if m.Dir != play.DirIn {
			continue
		}
		_, err := DefaultValidator(json.RawMessage(fmt.Sprintf(`{"type":%q}`, m.Name)))
		if err == nil || proto.AsError(err).Code != proto.CodeUnknownType {
			taken = append(taken, m.Name)
		}
		assert.Equal(t, m.Command, slices.Contains(taken, m.Name), "%s: %v", m.Name, err)
	}
	assert.Equal(t, play.RoomCommands(), taken)
}
