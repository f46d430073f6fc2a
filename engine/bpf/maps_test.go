package bpf

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func TestNewMapChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec MapSpec
		cpus int
		want error
	}{
		{"zero max_entries", MapSpec{Type: Array, KeySize: 4, ValueSize: 4}, 1, ErrInvalidMapSpec},
		{"zero value", MapSpec{Type: Hash, KeySize: 4, MaxEntries: 1}, 1, ErrInvalidMapSpec},
		{"array key 8", MapSpec{Type: Array, KeySize: 8, ValueSize: 4, MaxEntries: 1}, 1, ErrInvalidMapSpec},
		{"hash key above MAX_BPF_STACK", MapSpec{Type: Hash, KeySize: 513, ValueSize: 4, MaxEntries: 1}, 1, ErrInvalidMapSpec},
		{"devmap value 12", MapSpec{Type: DevMap, KeySize: 4, ValueSize: 12, MaxEntries: 1}, 1, ErrInvalidMapSpec},
		{"cpumap above NR_CPUS", MapSpec{Type: CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 9000}, 1, ErrInvalidMapSpec},
		{"too big", MapSpec{Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 1 << 30}, 1, ErrInvalidMapSpec},
		{"percpu too big", MapSpec{Type: PerCPUArray, KeySize: 4, ValueSize: 1 << 16, MaxEntries: 1 << 10}, 8, ErrInvalidMapSpec},
		{"prog array", MapSpec{Type: 3, KeySize: 4, ValueSize: 4, MaxEntries: 1}, 1, ErrUnsupportedMapType},
		{"no CPUs", MapSpec{Type: Array, KeySize: 4, ValueSize: 4, MaxEntries: 1}, 0, ErrInvalidOptions},
		{"bad contents", MapSpec{Type: Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Contents: []MapKV{{u32(1), u32(1)}}}, 1, ErrKeyOutOfRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.Name = tc.name
			_, err := NewMap(&spec, tc.cpus)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.want), "%v", err)
			assert.Contains(t, err.Error(), tc.name)
		})
	}
}

func TestArrayMap(t *testing.T) {
	m, err := NewMap(&MapSpec{Name: "a", Type: Array, KeySize: 4, ValueSize: 6, MaxEntries: 3,
		Contents: []MapKV{{u32(2), []byte("abcdef")}}}, 1)
	require.NoError(t, err)
	v, err := m.Value(u32(2), 0)
	require.NoError(t, err)
	assert.Equal(t, []byte("abcdef"), v)
	v, err = m.Value(u32(0), 0)
	require.NoError(t, err)
	assert.Equal(t, make([]byte, 6), v, "array elements always exist, zeroed")
	_, err = m.Value(u32(3), 0)
	assert.ErrorIs(t, err, ErrKeyNotExist)

	assert.NoError(t, m.Update(u32(1), []byte("123456"), UpdateExist))
	assert.ErrorIs(t, m.Update(u32(1), []byte("123456"), UpdateNoExist), ErrKeyExist)
	assert.ErrorIs(t, m.Update(u32(3), []byte("123456"), UpdateAny), ErrKeyOutOfRange)
	assert.ErrorIs(t, m.Update(u32(1), []byte("123456"), 3), ErrMapFlags)
	assert.ErrorIs(t, m.Update(u32(1), []byte("12345"), UpdateAny), ErrValueSize)
	assert.ErrorIs(t, m.Update([]byte{1}, []byte("123456"), UpdateAny), ErrKeySize)
	assert.ErrorIs(t, m.Delete(u32(1)), ErrMapOp)
	var me *MapError
	require.ErrorAs(t, m.Delete(u32(1)), &me)
	assert.Equal(t, EINVAL, me.Errno)

	assert.Equal(t, [][]byte{u32(0), u32(1), u32(2)}, m.Keys())
	k, err := m.NextKey(u32(99))
	require.NoError(t, err)
	assert.Equal(t, u32(0), k, "an absent key restarts iteration")
	_, err = m.NextKey(u32(2))
	assert.ErrorIs(t, err, ErrKeyNotExist)
}

func TestPerCPUArrayMap(t *testing.T) {
	m, err := NewMap(&MapSpec{Name: "p", Type: PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 2}, 3)
	require.NoError(t, err)
	require.NoError(t, m.Update(u32(0), u64(5), UpdateAny)) // every CPU
	sum, err := m.SumUint64(0)
	require.NoError(t, err)
	assert.Equal(t, uint64(15), sum)

	require.NoError(t, m.Update(u32(1), append(append(u64(1), u64(2)...), u64(3)...), UpdateAny)) // one per CPU
	for cpu, want := range []uint64{1, 2, 3} {
		v, err := m.Value(u32(1), cpu)
		require.NoError(t, err)
		assert.Equal(t, want, binary.LittleEndian.Uint64(v))
	}
	_, err = m.Value(u32(1), 3)
	assert.ErrorIs(t, err, ErrNoCPU)
	// Values are independent memory per CPU.
	v, err := m.Value(u32(1), 0)
	require.NoError(t, err)
	binary.LittleEndian.PutUint64(v, 100)
	sum, err = m.SumUint64(1)
	require.NoError(t, err)
	assert.Equal(t, uint64(105), sum)
}

// checkHtab verifies the hash table's invariants: every slot is either
// free or reachable from exactly one bucket, in the bucket of its hash,
// and findable by its key.
func checkHtab(t *testing.T, h *htab) {
	t.Helper()
	seen := make(map[int32]bool)
	for b, s := range h.buckets {
		for ; s >= 0; s = h.next[s] {
			require.False(t, seen[s], "slot %d linked twice", s)
			seen[s] = true
			require.Equal(t, uint32(b), h.hashes[s]&h.mask, "slot %d in the wrong bucket", s)
			require.Equal(t, s, h.find(h.key(s)))
		}
	}
	require.Len(t, seen, h.count)
	require.Equal(t, len(h.next), h.count+len(h.free))
	for _, s := range h.free {
		require.False(t, seen[s], "free slot %d is linked", s)
	}
}

func TestHashMap(t *testing.T) {
	m, err := NewMap(&MapSpec{Name: "h", Type: Hash, KeySize: 2, ValueSize: 4, MaxEntries: 5}, 1)
	require.NoError(t, err)
	key := func(i int) []byte { return []byte{byte(i), byte(i >> 8)} }
	for i := 0; i < 5; i++ {
		require.NoError(t, m.Update(key(i), u32(uint32(i*10)), UpdateNoExist))
		checkHtab(t, m.htab)
	}
	assert.ErrorIs(t, m.Update(key(5), u32(0), UpdateAny), ErrMapFull)
	var me *MapError
	require.ErrorAs(t, m.Update(key(5), u32(0), UpdateAny), &me)
	assert.Equal(t, E2BIG, me.Errno)
	assert.NoError(t, m.Update(key(3), u32(33), UpdateAny), "replacing works when full")
	assert.ErrorIs(t, m.Update(key(3), u32(33), UpdateNoExist), ErrKeyExist)
	assert.ErrorIs(t, m.Update(key(7), u32(33), UpdateExist), ErrKeyNotExist)
	v, err := m.Value(key(3), 0)
	require.NoError(t, err)
	assert.Equal(t, u32(33), v)

	require.NoError(t, m.Delete(key(1)))
	checkHtab(t, m.htab)
	assert.ErrorIs(t, m.Delete(key(1)), ErrKeyNotExist)
	_, err = m.Value(key(1), 0)
	assert.ErrorIs(t, err, ErrKeyNotExist)
	require.NoError(t, m.Update(key(9), u32(90), UpdateAny))
	checkHtab(t, m.htab)

	keys := m.Keys()
	assert.Len(t, keys, 5)
	// The order depends only on the keys and the history: a second map fed
	// the same operations iterates identically.
	m2, err := NewMap(&MapSpec{Name: "h", Type: Hash, KeySize: 2, ValueSize: 4, MaxEntries: 5}, 1)
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		require.NoError(t, m2.Update(key(i), u32(0), UpdateAny))
	}
	require.NoError(t, m2.Delete(key(1)))
	require.NoError(t, m2.Update(key(9), u32(0), UpdateAny))
	assert.Equal(t, keys, m2.Keys())
	// NextKey of an absent key restarts; iteration visits every key once.
	first, err := m.NextKey(key(1000))
	require.NoError(t, err)
	assert.Equal(t, keys[0], first)
	for i := 0; i+1 < len(keys); i++ {
		next, err := m.NextKey(keys[i])
		require.NoError(t, err)
		assert.Equal(t, keys[i+1], next)
	}
	_, err = m.NextKey(keys[len(keys)-1])
	assert.ErrorIs(t, err, ErrKeyNotExist)
}

func TestHashMapChurn(t *testing.T) {
	m, err := NewMap(&MapSpec{Name: "h", Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: 64}, 1)
	require.NoError(t, err)
	present := map[uint32]bool{}
	x := uint32(1)
	for i := 0; i < 2000; i++ {
		x = x*1664525 + 1013904223 // fixed LCG: deterministic churn
		k := x % 100
		if x>>31 == 1 {
			err := m.Delete(u32(k))
			if present[k] {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrKeyNotExist)
			}
			delete(present, k)
		} else {
			err := m.Update(u32(k), u64(uint64(k)), UpdateAny)
			if !present[k] && len(present) == 64 {
				require.ErrorIs(t, err, ErrMapFull)
				continue
			}
			require.NoError(t, err)
			present[k] = true
		}
		checkHtab(t, m.htab)
	}
	assert.Len(t, m.Keys(), len(present))
}

func TestDevMap(t *testing.T) {
	m, err := NewMap(&MapSpec{Name: "d", Type: DevMap, KeySize: 4, ValueSize: 8, MaxEntries: 4}, 1)
	require.NoError(t, err)
	prog := &Program{name: "egress"}
	require.NoError(t, m.SetDevMapEntry(1, DevMapValue{Ifindex: 7, Prog: prog}))
	require.NoError(t, m.Update(u32(2), append(u32(8), u32(0)...), UpdateAny))
	assert.ErrorIs(t, m.Update(u32(3), append(u32(8), u32(5)...), UpdateAny), ErrMapValue, "a program fd cannot be resolved")
	assert.ErrorIs(t, m.Update(u32(3), append(u32(8), u32(0)...), UpdateNoExist), ErrKeyExist)
	assert.ErrorIs(t, m.Update(u32(4), append(u32(8), u32(0)...), UpdateAny), ErrKeyOutOfRange)
	assert.ErrorIs(t, m.SetDevMapEntry(3, DevMapValue{Prog: prog}), ErrMapValue)

	v, ok := m.DevMapEntry(1)
	require.True(t, ok)
	assert.Equal(t, DevMapValue{Ifindex: 7, Prog: prog}, v)
	assert.Equal(t, [][]byte{u32(1), u32(2)}, m.Keys())

	require.NoError(t, m.Update(u32(1), make([]byte, 8), UpdateAny)) // ifindex 0 empties
	_, ok = m.DevMapEntry(1)
	assert.False(t, ok)
	require.NoError(t, m.Delete(u32(2)))
	require.NoError(t, m.Delete(u32(2)), "deleting an empty slot succeeds")
	assert.ErrorIs(t, m.Delete(u32(4)), ErrKeyInvalid)
	assert.Empty(t, m.Keys())
	assert.ErrorIs(t, m.SetCPUMapEntry(0, CPUMapValue{QSize: 1}), ErrMapOp)
}

func TestCPUMap(t *testing.T) {
	m, err := NewMap(&MapSpec{Name: "c", Type: CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 4}, 2)
	require.NoError(t, err)
	require.NoError(t, m.SetCPUMapEntry(1, CPUMapValue{QSize: 192}))
	assert.ErrorIs(t, m.Update(u32(2), u32(64), UpdateAny), ErrNoCPU, "only simulated CPUs")
	assert.ErrorIs(t, m.Update(u32(0), u32(MaxCPUMapQSize+1), UpdateAny), ErrQueueSize)
	assert.ErrorIs(t, m.Update(u32(4), u32(64), UpdateAny), ErrKeyOutOfRange)
	assert.ErrorIs(t, m.Update(u32(0), u32(64), UpdateNoExist), ErrKeyExist)
	v, ok := m.CPUMapEntry(1)
	require.True(t, ok)
	assert.Equal(t, uint32(192), v.QSize)
	val, err := m.Value(u32(1), 0)
	require.NoError(t, err)
	assert.Equal(t, u32(192), val)
	require.NoError(t, m.Update(u32(1), u32(0), UpdateAny)) // qsize 0 empties
	_, ok = m.CPUMapEntry(1)
	assert.False(t, ok)
}

func TestMapSpecIsCopied(t *testing.T) {
	spec := &MapSpec{Name: "a", Type: Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Contents: []MapKV{{u32(0), u32(9)}}}
	m, err := NewMap(spec, 1)
	require.NoError(t, err)
	spec.Name = "changed"
	spec.Contents[0].Value[0] = 1
	assert.Equal(t, "a", m.Name())
	v, err := m.Value(u32(0), 0)
	require.NoError(t, err)
	assert.Equal(t, u32(9), v)
	assert.Nil(t, m.Spec().Contents)
}
