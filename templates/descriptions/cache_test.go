package descriptions

import (
	"strconv"
	"testing"
)

// TestCacheBounded: the cache keeps its descriptions' estimated size under the budget and
// their number under the cap, whatever their sizes, and counts a replaced entry once.
func TestCacheBounded(t *testing.T) {
	const budget = 64 << 20
	maxDescriptions := budget / minDescriptionCost
	ds := New(nil, URLs{}, nil, budget)
	big := make([]byte, budget/(1+parsedPerByte)/10) // ten fit
	for i := range 50 {
		ds.remember("k"+strconv.Itoa(i), &Description{size: len(big)})
		if ds.bytes > budget || len(ds.cache) > 10 {
			t.Fatalf("after %d: %d entries, %d bytes (budget %d)", i+1, len(ds.cache), ds.bytes, budget)
		}
	}
	if len(ds.cache) != 10 {
		t.Fatalf("%d entries of a tenth of the budget kept", len(ds.cache))
	}
	ds = New(nil, URLs{}, nil, budget)
	for i := range maxDescriptions + 10 {
		ds.remember("k"+strconv.Itoa(i%(maxDescriptions+5)), &Description{size: 2})
	}
	sum := 0
	for _, d := range ds.cache {
		sum += d.cost()
	}
	if len(ds.cache) > maxDescriptions || sum != ds.bytes {
		t.Fatalf("%d entries (cap %d), counted %d bytes of %d", len(ds.cache), maxDescriptions, ds.bytes, sum)
	}
}
