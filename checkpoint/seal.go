package checkpoint

import (
	"bytes"
	"encoding/hex"
	"hash/crc32"

	"github.com/tidwall/gjson"
)

// A sealed line carries a CRC-32C of itself as the last member of its last
// member object (the runner's "llmrun" object), preceded by the request's
// fingerprint when it is known:
//
//	{"id":…,"custom_id":"a",…,"llmrun":{"attempts":1,"fingerprint":"9f86d081884c7d65","crc32c":"1a2b3c4d"}}
//
// The checksum covers every byte before `"crc32c"`. A JSON validity check
// alone misses the commonest corruption: 500 bytes cut out of a file of
// answers usually joins the start of one answer's text to the end of
// another's, and the spliced line is valid JSON with one id and another's
// answer. The checksum catches that and any other change, and it is
// several times cheaper to verify than JSON is to validate. Lines without a
// seal (written by an older llmrun, or by hand) are validated as JSON.
//
// Both fields sit at fixed offsets from the end of the line, so a scan reads
// them without parsing.

const (
	sealKey = `"crc32c":"`
	// sealLen is the length of the seal at the end of a line:
	// "crc32c":"xxxxxxxx"}}
	sealLen = len(sealKey) + 8 + len(`"}}`)
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// fpKey and fpLen describe the fingerprint member before the seal:
// "fingerprint":"0123456789abcdef",
const (
	fpKey = `"fingerprint":"`
	fpLen = len(fpKey) + 16 + len(`",`)
)

// sealable reports whether line is a compact object whose last member is an
// object, which is where seal puts the fingerprint and the checksum.
func sealable(line []byte) bool {
	n := len(line)
	return n >= 4 && line[0] == '{' && line[n-1] == '}' && line[n-2] == '}'
}

// seal appends line to dst with fp (unless zero) and its checksum added, or
// line unchanged if it is not sealable.
func seal(dst, line []byte, fp Fingerprint) []byte {
	n := len(line)
	if !sealable(line) {
		return append(dst, line...)
	}
	start := len(dst)
	dst = append(dst, line[:n-2]...)
	if line[n-3] != '{' {
		dst = append(dst, ',')
	}
	if fp != 0 {
		dst = append(dst, fpKey...)
		dst = append(dst, fp.String()...)
		dst = append(dst, `",`...)
	}
	dst = append(dst, sealKey...)
	sum := crc32.Checksum(dst[start:len(dst)-len(sealKey)], crcTable)
	var b [4]byte
	b[0], b[1], b[2], b[3] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
	dst = hex.AppendEncode(dst, b[:])
	return append(dst, `"}}`...)
}

// lineFP returns the fingerprint a line carries, 0 if none. A sealed line
// has it at a fixed offset; an unsealed one (a seal removed by hand) is
// searched, as "llmrun.fingerprint".
func lineFP(line []byte) Fingerprint {
	n := len(line)
	if hasSeal(line) {
		if n < sealLen+fpLen {
			return 0
		}
		f := line[n-sealLen-fpLen : n-sealLen]
		if string(f[:len(fpKey)]) != fpKey || f[fpLen-2] != '"' {
			return 0
		}
		fp, _ := parseHex16(f[len(fpKey) : len(fpKey)+16])
		return fp
	}
	if !bytes.Contains(line, []byte(fpKey)) {
		return 0
	}
	fp, err := ParseFingerprint(gjson.GetBytes(line, "llmrun.fingerprint").Str)
	if err != nil {
		return 0
	}
	return fp
}

// sealState is what verifySeal found.
type sealState int

const (
	unsealed sealState = iota
	sealOK
	sealBroken
)

// hasSeal reports whether line ends in a seal, right or wrong.
func hasSeal(line []byte) bool {
	n := len(line)
	return n >= sealLen+2 && string(line[n-3:]) == `"}}` && string(line[n-sealLen:n-sealLen+len(sealKey)]) == sealKey
}

// verifySeal checks a line's seal.
func verifySeal(line []byte) sealState {
	n := len(line)
	if !hasSeal(line) {
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

// Answered reports whether an output line answers its request: a success
// record llmrun sealed (see succeeded). Anything else in an output (a line
// made by hand or by an older llmrun, a failure record, the input itself
// given as -o) is not an answer, and its request is sent again.
func Answered(line []byte) bool { return verifySeal(line) == sealOK && succeeded(line) }

// succeeded reports whether a line is a success record: a response with a
// 2xx status and no error. The runner's own lines are read at fixed places
// (response first after the ids, `"error":null` before the llmrun object);
// anything else goes through gjson.
func succeeded(line []byte) bool {
	status := int64(-1)
	if i := bytes.Index(line, []byte(respPrefix)); i >= 0 {
		status = leadingInt(line[i+len(respPrefix):])
	}
	if status < 0 {
		if r := gjson.GetBytes(line, "response.status_code"); r.Type == gjson.Number {
			status = r.Int()
		}
	}
	if status < 200 || status > 299 {
		return false
	}
	if j := bytes.LastIndexByte(line, '{'); j >= 0 && bytes.HasSuffix(line[:j+1], []byte(runnerTail)) {
		return true // the runner's last members, found from the end: not a search across the answer
	}
	if !bytes.Contains(line, []byte(`"error":`)) {
		return true
	}
	e := gjson.GetBytes(line, "error")
	return !e.Exists() || e.Type == gjson.Null
}

// runnerTail ends a runner's line but for its llmrun object, the last
// member, which holds no object (so its '{' is the line's last).
const runnerTail = `"error":null,"llmrun":{`

// respPrefix starts the response of a line as the runner writes it.
const respPrefix = `"response":{"status_code":`

// leadingInt reads the decimal digits at the start of b followed by a ',' or
// '}'; -1 if there are none.
func leadingInt(b []byte) int64 {
	var n int64
	i := 0
	for ; i < len(b) && i < 6 && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int64(b[i]-'0')
	}
	if i == 0 || i == len(b) || (b[i] != ',' && b[i] != '}') {
		return -1
	}
	return n
}
