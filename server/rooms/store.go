package rooms

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// StoreDir is the name of the rooms' directory in a state directory.
const StoreDir = "rooms"

// LegacyStoreFile is the single database older builds kept rooms in; it
// is not read (serve says so when it finds one).
const LegacyStoreFile = "rooms.db"

// storeOpenWait bounds waiting for another process's lock on the
// directory.
const storeOpenWait = 2 * time.Second

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
	// The class (a class record later in the file replaces them): its
	// size (0: the server's default), the invitation a student's
	// connection carries, and whether the plain room id admits students
	// too (a room stored before invitations, with none, does).
	ClassSize int    `json:"class_size,omitempty"`
	Invite    string `json:"invite,omitempty"`
	Open      bool   `json:"open,omitempty"`
}

// ClassRecord is a room's class as its instructor last set it.
type ClassRecord struct {
	ClassSize int    `json:"class_size"`
	Invite    string `json:"invite"`
	Open      bool   `json:"open"`
}

// Store keeps each room in a file of its own in a directory, ID.room: a
// sequence of records, each a 4-byte length, the CRC-32C of its payload
// and the payload; the first is the room (StoredRoom in JSON), each next
// one a command of its log (its seq, the time it was committed, the
// command) or the room's class as its instructor set it (ClassRecord in
// JSON, the last one holding). A command is written and fsync'd before it is broadcast, so
// a server killed mid-workshop and started again has every room and every
// command it acknowledged.
//
// A damaged file takes down its room only: Load sets it aside (renamed
// ID.room.damaged-TIME, kept for whoever looks) and reports it; a file
// that ends inside a record (a write a crash cut short, never
// acknowledged) keeps the commands before it, and a copy of it is kept
// the same way. Nothing in a file makes Load panic (FuzzStoreLoad). Safe
// for concurrent use; commands of one room are appended one at a time.
type Store struct {
	dir  string
	lock *os.File // held for the store's life: one server per directory

	mu    sync.Mutex
	rooms map[string]*roomFile
}

// ErrStoreInUse means another process holds the store open: a ringlab
// serve with the same --state-dir.
var ErrStoreInUse = errors.New("another process (a ringlab serve with the same --state-dir?) holds it")

// roomFile is one room's open file.
type roomFile struct {
	mu   sync.Mutex
	f    *os.File
	last uint64 // the seq of its last command
	size int64  // the bytes of its whole records
}

// write appends b and fsyncs it; on failure (a full disk) the file is
// cut back to its whole records, so that a record written in part, or
// written and not known to be on disk, is not followed by the next one.
func (rf *roomFile) write(b []byte) error {
	_, err := rf.f.Write(b)
	if err == nil {
		err = rf.f.Sync()
	}
	if err != nil {
		rf.f.Truncate(rf.size) // best effort: Load cuts a torn end too
		return err
	}
	rf.size += int64(len(b))
	return nil
}

// Damage is a room file Load set aside or repaired.
type Damage struct {
	Room   string // the room's id, "" when its file did not say
	File   string // the file as it was found
	Kept   string // where that file (or a copy) is kept now
	Reason string
	// Restored reports that the room was loaded all the same, with the
	// commands before a record a crash cut short (Commands of them).
	Restored bool
	Commands int
}

// Loaded is what Load found: the rooms, each with its log in order, and
// the files it set aside.
type Loaded struct {
	Rooms    []StoredRoom
	Logs     [][]Entry
	SetAside []Damage
}

// Records.
const (
	recordHeader = 8       // length and CRC-32C, big endian
	maxRecord    = 4 << 20 // a record's payload: a room or a command, far less
	kindRoom     = 'R'
	kindCommand  = 'C'
	kindClass    = 'K'
	commandHead  = 1 + 8 + 8 // kind, seq, Unix nanoseconds
	roomSuffix   = ".room"
)

var (
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)
	roomPattern = regexp.MustCompile(`^[0-9A-Za-z_-]{1,64}$`)
)

// Errors of a room file.
var (
	errTorn    = errors.New("the file ends inside a record")
	errDamaged = errors.New("damaged")
)

// OpenStore opens (creating it) the store in directory dir. A directory
// another process holds is an error within storeOpenWait.
func OpenStore(dir string) (*Store, error) { return openStore(dir, storeOpenWait) }

// openStore is OpenStore waiting at most wait for the lock.
func openStore(dir string, wait time.Duration) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("rooms store: %w", err)
	}
	lock, err := lockDir(dir, wait)
	if err != nil {
		return nil, fmt.Errorf("rooms store %s: %w", dir, err)
	}
	return &Store{dir: dir, lock: lock, rooms: map[string]*roomFile{}}, nil
}

// Path returns the store's directory.
func (s *Store) Path() string { return s.dir }

// Close closes the room files and gives the directory up.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for id, rf := range s.rooms {
		if rf == nil {
			continue // a Create under way
		}
		rf.mu.Lock()
		errs = append(errs, rf.f.Close())
		rf.mu.Unlock()
		delete(s.rooms, id)
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close()) // closing releases the lock
		s.lock = nil
	}
	return errors.Join(errs...)
}

func (s *Store) file(id string) string { return filepath.Join(s.dir, id+roomSuffix) }

// frame appends one record of payload to b.
func frame(b, payload []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// commandRecord is a command's record.
func commandRecord(e Entry, at time.Time) []byte {
	p := make([]byte, 0, commandHead+len(e.Cmd))
	p = append(p, kindCommand)
	p = binary.BigEndian.AppendUint64(p, e.Seq)
	p = binary.BigEndian.AppendUint64(p, uint64(at.UnixNano()))
	p = append(p, e.Cmd...)
	return frame(nil, p)
}

// Create writes a new room with an empty log: to a temporary file,
// fsync'd, then renamed into place, so a room file is whole or absent.
func (s *Store) Create(r StoredRoom) error {
	if !roomPattern.MatchString(r.ID) {
		return fmt.Errorf("rooms store: room id %q: want 1 to 64 letters, digits, - or _", r.ID)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	data := frame(nil, append([]byte{kindRoom}, b...))
	s.mu.Lock()
	_, exists := s.rooms[r.ID]
	if !exists {
		s.rooms[r.ID] = nil // taken: written below, outside the lock
	}
	s.mu.Unlock()
	if exists {
		return fmt.Errorf("rooms store: room %s exists", r.ID)
	}
	path := s.file(r.ID)
	var f *os.File
	err = writeFileSync(path, data)
	if err == nil {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		delete(s.rooms, r.ID)
		return fmt.Errorf("rooms store: %w", err)
	}
	s.rooms[r.ID] = &roomFile{f: f, size: int64(len(data))}
	return nil
}

// writeFileSync writes path whole or not at all: a temporary file,
// fsync'd, renamed, and the directory fsync'd.
func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Append commits one numbered command of a room's log, with the time it
// was committed (the room's activity), and returns once it is on disk.
func (s *Store) Append(id string, e Entry, at time.Time) error {
	s.mu.Lock()
	rf := s.rooms[id]
	s.mu.Unlock()
	if rf == nil {
		return fmt.Errorf("rooms store: no room %s", id)
	}
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if e.Seq != rf.last+1 {
		return fmt.Errorf("rooms store: room %s: command %d after %d", id, e.Seq, rf.last)
	}
	if err := rf.write(commandRecord(e, at)); err != nil {
		return fmt.Errorf("rooms store: room %s: %w", id, err)
	}
	rf.last = e.Seq
	return nil
}

// SetClass records a room's class (its size, invitation and whether its
// plain id admits students) and returns once it is on disk.
func (s *Store) SetClass(id string, c ClassRecord) error {
	s.mu.Lock()
	rf := s.rooms[id]
	s.mu.Unlock()
	if rf == nil {
		return fmt.Errorf("rooms store: no room %s", id)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if err := rf.write(frame(nil, append([]byte{kindClass}, b...))); err != nil {
		return fmt.Errorf("rooms store: room %s: %w", id, err)
	}
	return nil
}

// AppendLog appends commands (canonical) after a room's last one: for a
// tool, or a test, that writes a room's log while no server runs. The
// room is the one Load found.
func (s *Store) AppendLog(id string, cmds ...json.RawMessage) error {
	s.mu.Lock()
	rf := s.rooms[id]
	s.mu.Unlock()
	if rf == nil {
		return fmt.Errorf("rooms store: no room %s (Load first)", id)
	}
	rf.mu.Lock()
	defer rf.mu.Unlock()
	var b []byte
	seq := rf.last
	for _, c := range cmds {
		seq++
		b = append(b, commandRecord(Entry{Seq: seq, Cmd: c}, time.Now())...)
	}
	if err := rf.write(b); err != nil {
		return err
	}
	rf.last = seq
	return nil
}

// Delete removes a room and its log.
func (s *Store) Delete(id string) error {
	s.mu.Lock()
	rf := s.rooms[id]
	delete(s.rooms, id)
	s.mu.Unlock()
	if rf != nil {
		rf.mu.Lock()
		rf.f.Close()
		rf.mu.Unlock()
	}
	if err := os.Remove(s.file(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rooms store: %w", err)
	}
	return syncDir(s.dir)
}

// Load reads every room file of the directory, each on its own: a
// damaged one is set aside (reported in SetAside) and the others load.
// It opens the rooms it returns for Append; the error is the directory's
// (unreadable), never a room's.
func (s *Store) Load() (Loaded, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return Loaded{}, fmt.Errorf("rooms store %s: %w", s.dir, err)
	}
	var out Loaded
	for _, ent := range ents {
		name := ent.Name()
		if strings.HasSuffix(name, roomSuffix+".tmp") {
			os.Remove(filepath.Join(s.dir, name)) // a Create a crash cut short: never acknowledged
			continue
		}
		if !ent.Type().IsRegular() || !strings.HasSuffix(name, roomSuffix) {
			continue
		}
		room, log, dmg := s.loadOne(strings.TrimSuffix(name, roomSuffix))
		if dmg != nil {
			out.SetAside = append(out.SetAside, *dmg)
		}
		if room != nil {
			out.Rooms = append(out.Rooms, *room)
			out.Logs = append(out.Logs, log)
		}
	}
	return out, nil
}

// loadOne reads the room of file ID.room and opens it for Append; a
// damaged file is set aside (nil room) or, torn at its end, repaired.
func (s *Store) loadOne(id string) (*StoredRoom, []Entry, *Damage) {
	path := s.file(id)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, &Damage{File: path, Reason: err.Error()}
	}
	room, log, good, err := parseRoomFile(data)
	if err == nil && room.ID != id {
		err = fmt.Errorf("%w: the file of room %s holds room %q", errDamaged, id, room.ID)
	}
	var dmg *Damage
	switch {
	case err == nil:
	case errors.Is(err, errTorn) && room.ID == id:
		// Keep the commands before the torn record; the file as it was
		// is kept beside.
		kept, kerr := s.keepCopy(path, data)
		dmg = &Damage{Room: id, File: path, Kept: kept, Reason: err.Error(), Restored: true, Commands: len(log)}
		if kerr != nil {
			dmg.Reason += "; keeping a copy: " + kerr.Error()
		}
		if terr := os.Truncate(path, int64(good)); terr != nil {
			dmg.Restored = false
			dmg.Reason += "; repairing: " + terr.Error()
			return nil, nil, dmg
		}
	default:
		kept, kerr := s.setAside(path)
		dmg = &Damage{Room: room.ID, File: path, Kept: kept, Reason: err.Error()}
		if kerr != nil {
			dmg.Reason += "; setting it aside: " + kerr.Error()
		}
		return nil, nil, dmg
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, &Damage{Room: id, File: path, Reason: err.Error()}
	}
	var last uint64
	if n := len(log); n > 0 {
		last = log[n-1].Seq
	}
	s.mu.Lock()
	s.rooms[id] = &roomFile{f: f, last: last, size: int64(good)}
	s.mu.Unlock()
	return &room, log, dmg
}

// setAside renames a damaged file out of the store's way and returns its
// new name.
func (s *Store) setAside(path string) (string, error) {
	kept := path + ".damaged-" + time.Now().UTC().Format("20060102T150405.000000000")
	if err := os.Rename(path, kept); err != nil {
		return path, err
	}
	return kept, syncDir(s.dir)
}

// keepCopy writes a copy of a file being repaired beside it.
func (s *Store) keepCopy(path string, data []byte) (string, error) {
	kept := path + ".torn-" + time.Now().UTC().Format("20060102T150405.000000000")
	return kept, writeFileSync(kept, data)
}

// parseRoomFile reads a room file's bytes: the room, its log, and how
// many bytes of data are whole records. The error wraps errTorn when the
// data ends inside a record (the room and log before it are returned),
// errDamaged for anything else wrong (a checksum, a record out of place,
// a command that is not JSON, a log out of order). It never panics.
func parseRoomFile(data []byte) (room StoredRoom, log []Entry, good int, err error) {
	off := 0
	var last uint64
	for n := 0; ; n++ {
		if off == len(data) {
			if n == 0 {
				return room, nil, 0, fmt.Errorf("%w: the file is empty", errDamaged)
			}
			return room, log, off, nil
		}
		if len(data)-off < recordHeader {
			return room, log, off, fmt.Errorf("%w: %d bytes after record %d at byte %d", errTorn, len(data)-off, n, off)
		}
		size := binary.BigEndian.Uint32(data[off:])
		sum := binary.BigEndian.Uint32(data[off+4:])
		if size > maxRecord {
			return room, log, off, fmt.Errorf("%w: record %d at byte %d claims %d bytes, more than a record has", errDamaged, n, off, size)
		}
		if uint64(len(data)-off-recordHeader) < uint64(size) {
			return room, log, off, fmt.Errorf("%w: record %d at byte %d has %d of its %d bytes", errTorn, n, off, len(data)-off-recordHeader, size)
		}
		p := data[off+recordHeader : off+recordHeader+int(size)]
		if crc32.Checksum(p, castagnoli) != sum {
			return room, log, off, fmt.Errorf("%w: record %d at byte %d: checksum mismatch", errDamaged, n, off)
		}
		switch {
		case n == 0:
			if len(p) == 0 || p[0] != kindRoom {
				return room, log, off, fmt.Errorf("%w: the first record is not a room", errDamaged)
			}
			if err := json.Unmarshal(p[1:], &room); err != nil {
				return StoredRoom{}, log, off, fmt.Errorf("%w: the room record: %v", errDamaged, err)
			}
			if !roomPattern.MatchString(room.ID) {
				return StoredRoom{}, log, off, fmt.Errorf("%w: the room record names room %q", errDamaged, room.ID)
			}
		case len(p) > 0 && p[0] == kindClass:
			var c ClassRecord
			if err := json.Unmarshal(p[1:], &c); err != nil {
				return room, log, off, fmt.Errorf("%w: record %d at byte %d, a class: %v", errDamaged, n, off, err)
			}
			room.ClassSize, room.Invite, room.Open = c.ClassSize, c.Invite, c.Open
		default:
			if len(p) < commandHead || p[0] != kindCommand {
				return room, log, off, fmt.Errorf("%w: record %d at byte %d is not a command", errDamaged, n, off)
			}
			seq := binary.BigEndian.Uint64(p[1:])
			at := int64(binary.BigEndian.Uint64(p[9:]))
			cmd := p[commandHead:]
			if seq != last+1 {
				return room, log, off, fmt.Errorf("%w: record %d at byte %d is command %d after %d", errDamaged, n, off, seq, last)
			}
			if !json.Valid(cmd) {
				return room, log, off, fmt.Errorf("%w: command %d is not JSON", errDamaged, seq)
			}
			last = seq
			log = append(log, Entry{Seq: seq, Cmd: slices.Clone(json.RawMessage(cmd))})
			if t := time.Unix(0, at); t.After(room.Active) {
				room.Active = t
			}
		}
		off += recordHeader + int(size)
	}
}
