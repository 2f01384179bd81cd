package platform

import (
	"testing"
	"unsafe"
)

// A session is one of the allocator's 768-byte objects: an object past
// 512 bytes that holds pointers carries an 8-byte header, so a session of
// 760 bytes or fewer takes 768, and one byte more takes 896 (a week of
// loops makes some 240 sessions).
func TestASessionIsOne768ByteObjectWithItsHeader(t *testing.T) {
	if size := unsafe.Sizeof(session{}); size > 768-8 {
		t.Fatalf("a session is %d bytes: with its 8-byte header it is past the 768-byte size class", size)
	}
}
