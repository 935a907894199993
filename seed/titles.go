package seed

import "hash/fnv"

// titleSet remembers which titles were used (by their look-alike keys,
// see drawTitle) in a fixed number of bits (a Bloom filter), not in a set
// of strings that would grow with every post. It never forgets a title,
// so no two posts share one; now and then it wrongly reports an unused
// title as used, and that title is redrawn. The hash is fixed (not seeded
// per process), so the redraws, and the titles, are the same every run.
type titleSet struct {
	bits []uint64
}

// titleHashes is how many bits each title sets; with 16 bits per title it
// misreports about one title in a thousand.
const titleHashes = 6

// newTitleSet sizes the set for n titles: 16 bits each, at least 4 Kib and
// at most 256 Mib (32 MiB), past which more redraws are the price.
func newTitleSet(n int) *titleSet {
	bits := min(max(16*n, 1<<12), 1<<28)
	return &titleSet{bits: make([]uint64, bits/64)}
}

// add records title and reports whether it was new.
func (s *titleSet) add(title string) bool {
	h := fnv.New64a()
	h.Write([]byte(title))
	sum := h.Sum64()
	// Double hashing: the k bit positions are a + i·b.
	a, b := sum, sum>>33|1
	m := uint64(len(s.bits) * 64)
	added := false
	for i := range uint64(titleHashes) {
		bit := (a + i*b) % m
		word, mask := bit/64, uint64(1)<<(bit%64)
		if s.bits[word]&mask == 0 {
			s.bits[word] |= mask
			added = true
		}
	}
	return added
}
