package rooms

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// StoreFile is the name of the rooms' database in a state directory.
const StoreFile = "rooms.db"

// storeOpenWait bounds waiting for another process's lock on the file.
const storeOpenWait = 2 * time.Second

// Bucket names. rooms maps a room's id to its record (JSON); each room's
// log is the bucket "log/ID", seq (8 bytes, big endian) to the command.
var (
	bucketRooms = []byte("rooms")
	logPrefix   = "log/"
)

// StoredRoom is what the store keeps of a room besides its log.
type StoredRoom struct {
	ID string `json:"id"`
	// TokenHash is the SHA-256 of the instructor token: the token itself
	// is never written down.
	TokenHash []byte          `json:"token_sha256"`
	Scenario  json.RawMessage `json:"scenario,omitempty"`
	Creator   string          `json:"creator"` // the address that created it
	Created   time.Time       `json:"created"`
	// Active is when the room was last commanded (or created).
	Active time.Time `json:"active"`
}

// Store keeps rooms and their logs in a bbolt database, so that a
// server killed mid-workshop and started again has every room and every
// command it acknowledged: a command is committed (fsync'd) before it is
// broadcast. Safe for concurrent use; commands of different rooms that
// arrive together share one commit (bbolt's Batch).
type Store struct {
	db   *bolt.DB
	path string
}

// ErrStoreInUse means another process holds the store open: a ringlab
// serve with the same --state-dir.
var ErrStoreInUse = errors.New("another process (a ringlab serve with the same --state-dir?) holds it")

// OpenStore opens (creating it and its directory) the store at path. A
// file another process holds open is an error within storeOpenWait.
func OpenStore(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("rooms store: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: storeOpenWait})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("rooms store %s: %w", path, ErrStoreInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("rooms store %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketRooms)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("rooms store %s: %w", path, err)
	}
	return &Store{db: db, path: path}, nil
}

// Path returns the database's file.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// Create writes a new room with an empty log.
func (s *Store) Create(r StoredRoom) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketRooms).Put([]byte(r.ID), b); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists([]byte(logPrefix + r.ID))
		return err
	})
}

// Append commits one numbered command of a room's log, with the room's
// activity time, and returns once it is on disk.
func (s *Store) Append(id string, e Entry, active time.Time) error {
	return s.db.Batch(func(tx *bolt.Tx) error {
		rooms := tx.Bucket(bucketRooms)
		raw := rooms.Get([]byte(id))
		log := tx.Bucket([]byte(logPrefix + id))
		if raw == nil || log == nil {
			return fmt.Errorf("rooms store: no room %s", id)
		}
		if last, _ := log.Cursor().Last(); last != nil && binary.BigEndian.Uint64(last)+1 != e.Seq {
			return fmt.Errorf("rooms store: room %s: command %d after %d", id, e.Seq, binary.BigEndian.Uint64(last))
		}
		if err := log.Put(seqKey(e.Seq), e.Cmd); err != nil {
			return err
		}
		var r StoredRoom
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		r.Active = active
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return rooms.Put([]byte(id), b)
	})
}

// AppendLog appends commands (canonical) after a room's last one: for a
// tool, or a test, that writes a room's log while no server runs.
func (s *Store) AppendLog(id string, cmds ...json.RawMessage) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		log := tx.Bucket([]byte(logPrefix + id))
		if log == nil {
			return fmt.Errorf("rooms store: no room %s", id)
		}
		var seq uint64
		if last, _ := log.Cursor().Last(); last != nil {
			seq = binary.BigEndian.Uint64(last)
		}
		for _, c := range cmds {
			seq++
			if err := log.Put(seqKey(seq), c); err != nil {
				return err
			}
		}
		return nil
	})
}

// Delete removes a room and its log.
func (s *Store) Delete(id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketRooms).Delete([]byte(id)); err != nil {
			return err
		}
		if err := tx.DeleteBucket([]byte(logPrefix + id)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			return err
		}
		return nil
	})
}

// Load returns every room with its log, in order.
func (s *Store) Load() ([]StoredRoom, [][]Entry, error) {
	var rooms []StoredRoom
	var logs [][]Entry
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRooms).ForEach(func(k, v []byte) error {
			var r StoredRoom
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("room %s: %w", k, err)
			}
			var log []Entry
			if b := tx.Bucket([]byte(logPrefix + r.ID)); b != nil {
				if err := b.ForEach(func(k, v []byte) error {
					log = append(log, Entry{Seq: binary.BigEndian.Uint64(k), Cmd: append(json.RawMessage(nil), v...)})
					return nil
				}); err != nil {
					return err
				}
			}
			for i, e := range log {
				if e.Seq != uint64(i+1) {
					return fmt.Errorf("room %s: its log has command %d at %d", r.ID, e.Seq, i+1)
				}
			}
			rooms = append(rooms, r)
			logs = append(logs, log)
			return nil
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("rooms store %s: %w", s.path, err)
	}
	return rooms, logs, nil
}
