package checkpoint

import (
	"encoding/hex"
	"hash/crc32"
)

// A sealed line carries a CRC-32C of itself as the last member of its last
// member object (the runner's "llmrun" object):
//
//	{"id":…,"custom_id":"a",…,"llmrun":{"attempts":1,"crc32c":"1a2b3c4d"}}
//
// The checksum covers every byte before `"crc32c"`. A JSON validity check
// alone misses the commonest corruption: 500 bytes cut out of a file of
// answers usually joins the start of one answer's text to the end of
// another's, and the spliced line is valid JSON with one id and another's
// answer. The checksum catches that and any other change, and it is
// several times cheaper to verify than JSON is to validate. Lines without a
// seal (written by an older llmrun, or by hand) are validated as JSON.

const (
	sealKey = `"crc32c":"`
	// sealLen is the length of the seal at the end of a line:
	// "crc32c":"xxxxxxxx"}}
	sealLen = len(sealKey) + 8 + len(`"}}`)
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// seal returns line with its checksum added, appended to dst, or line
// unchanged (appended) if it is not a compact object whose last member is an
// object.
func seal(dst, line []byte) []byte {
	n := len(line)
	if n < 4 || line[0] != '{' || line[n-1] != '}' || line[n-2] != '}' {
		return append(dst, line...)
	}
	start := len(dst)
	dst = append(dst, line[:n-2]...)
	if line[n-3] != '{' {
		dst = append(dst, ',')
	}
	dst = append(dst, sealKey...)
	sum := crc32.Checksum(dst[start:len(dst)-len(sealKey)], crcTable)
	var b [4]byte
	b[0], b[1], b[2], b[3] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
	dst = hex.AppendEncode(dst, b[:])
	return append(dst, `"}}`...)
}

// sealState is what verifySeal found.
type sealState int

const (
	unsealed sealState = iota
	sealOK
	sealBroken
)

// verifySeal checks a line's seal.
func verifySeal(line []byte) sealState {
	n := len(line)
	if n < sealLen+2 || string(line[n-3:]) != `"}}` || string(line[n-sealLen:n-sealLen+len(sealKey)]) != sealKey {
		return unsealed
	}
	var b [4]byte
	if _, err := hex.Decode(b[:], line[n-11:n-3]); err != nil {
		return sealBroken
	}
	want := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	if crc32.Checksum(line[:n-sealLen], crcTable) != want {
		return sealBroken
	}
	return sealOK
}
