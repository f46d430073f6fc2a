package bpf

import (
	"errors"
	"fmt"
)

// Sentinel errors of program preparation and ELF loading. They are wrapped
// with the instruction offset, mnemonic, program or section they concern;
// match them with errors.Is.
var (
	ErrInvalidInstruction     = errors.New("invalid instruction")
	ErrUnsupportedInstruction = errors.New("unsupported instruction")
	ErrUnsupportedHelper      = errors.New("unsupported helper")
	ErrJumpOutOfRange         = errors.New("jump out of range")
	ErrInvalidRegister        = errors.New("invalid register")
	ErrNoExit                 = errors.New("program does not end with exit or jump")
	ErrUnreachable            = errors.New("unreachable instruction")
	ErrUnresolvedMap          = errors.New("unresolved map reference")
	ErrUnresolvedReference    = errors.New("unresolved jump or call reference")
	ErrProgramTooLarge        = errors.New("program too large")
	ErrInvalidMapSpec         = errors.New("invalid map spec")
	ErrUnsupportedMapType     = errors.New("unsupported map type")
	ErrNotXDP                 = errors.New("not an XDP program")
	ErrInvalidELF             = errors.New("invalid or unsupported ELF object")
	ErrELFTooLarge            = errors.New("ELF object too large")
	ErrInvalidOptions         = errors.New("invalid options")
	// ErrNotELF is ErrInvalidELF for bytes that are no ELF object at
	// all (a text file, the program's source): they lack ELF's magic.
	ErrNotELF error = notELF{}
)

type notELF struct{}

func (notELF) Error() string        { return "not an ELF object" }
func (notELF) Is(target error) bool { return target == ErrInvalidELF }

// Errno is a kernel error number; helpers hand it to programs as -Errno.
type Errno int

// Errno values used by the map and helper code (include/uapi/asm-generic/errno*.h).
const (
	ENOENT    Errno = 2
	E2BIG     Errno = 7
	EBADF     Errno = 9
	ENOMEM    Errno = 12
	EEXIST    Errno = 17
	ENODEV    Errno = 19
	EINVAL    Errno = 22
	EOVERFLOW Errno = 75
)

// ret is the errno as a helper's R0: -errno in two's complement.
func (e Errno) ret() uint64 { return uint64(-int64(e)) }

// MapError is a map operation failure with the errno the kernel would give.
type MapError struct {
	Msg   string
	Errno Errno
}

func (e *MapError) Error() string { return e.Msg }

// Map operation sentinels, as the kernel's map ops return them.
var (
	// ErrKeyNotExist: lookup or delete of an absent key, BPF_EXIST update of
	// an absent key (-ENOENT).
	ErrKeyNotExist = &MapError{"key does not exist", ENOENT}
	// ErrKeyExist: BPF_NOEXIST update of a present key; any BPF_NOEXIST
	// update of an array-like map (-EEXIST).
	ErrKeyExist = &MapError{"key already exists", EEXIST}
	// ErrKeyOutOfRange: array-like index >= max_entries on update (-E2BIG).
	ErrKeyOutOfRange = &MapError{"index out of range", E2BIG}
	// ErrMapFull: insertion into a hash map holding max_entries (-E2BIG).
	ErrMapFull = &MapError{"map is full", E2BIG}
	// ErrMapFlags: update flags other than BPF_ANY, BPF_NOEXIST, BPF_EXIST
	// (-EINVAL).
	ErrMapFlags = &MapError{"invalid update flags", EINVAL}
	// ErrMapOp: an operation the map type does not have, such as deleting
	// from an array (-EINVAL).
	ErrMapOp = &MapError{"operation not supported by map type", EINVAL}
	// ErrMapValue: a value the map type refuses, such as a devmap entry
	// naming a program by fd (-EINVAL).
	ErrMapValue = &MapError{"invalid value", EINVAL}
	// ErrNoCPU: cpumap key that is not a simulated CPU (-ENODEV).
	ErrNoCPU = &MapError{"no such CPU", ENODEV}
	// ErrQueueSize: cpumap qsize above 16384 (-EOVERFLOW).
	ErrQueueSize = &MapError{"cpumap qsize too large", EOVERFLOW}
	// ErrKeyInvalid: devmap or cpumap delete of an index >= max_entries
	// (-EINVAL).
	ErrKeyInvalid = &MapError{"index out of range", EINVAL}
	// ErrKeySize / ErrValueSize: a Go caller passed a key or value of the
	// wrong length (-EINVAL).
	ErrKeySize   = &MapError{"wrong key size", EINVAL}
	ErrValueSize = &MapError{"wrong value size", EINVAL}
)

// errnoOf returns the negative errno for err as a helper's return value.
func errnoOf(err error) uint64 {
	// Internal map operations return the sentinels unwrapped, so a type
	// assertion suffices and nothing allocates on the helper path.
	if me, ok := err.(*MapError); ok {
		return me.Errno.ret()
	}
	return EINVAL.ret()
}

// insnError wraps a preparation error with the raw instruction offset and
// the instruction's mnemonic, as the kernel verifier names "insn N".
func insnError(off int, ins fmt.Formatter, err error) error {
	return fmt.Errorf("insn %d (%v): %w", off, ins, err)
}
