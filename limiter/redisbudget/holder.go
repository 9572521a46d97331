package redisbudget

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Holder names the process that holds a Budget's concurrency leases, so
// that a process restarted in the same role (after kill -9, say) frees its
// predecessor's slots at once instead of waiting Lease for them to expire.
// The zero Holder is anonymous: nothing is reclaimed.
//
// Every ticket id records the holder (role, host, pid and a random
// instance). On its first Reserve of a key, a Budget with a Role removes
// from the key's in-flight set the tickets of the same role on the same
// host whose process is gone: another instance whose pid is not alive, or
// is this process's own pid (a restarted container's pid 1). A live
// process's tickets are never taken.
type Holder struct {
	// Role is what a restarted process shares with its dead predecessor
	// and no other live process has: llmrun uses the output file, whose
	// lock only one process at a time holds. Empty: nothing is reclaimed.
	Role string
	// Host and PID name this process (os.Hostname and os.Getpid when
	// empty or zero).
	Host string
	PID  int
	// Alive reports whether process pid on this host still runs; nil
	// asks the operating system (signal 0; where that is not available
	// every process counts as alive and nothing is reclaimed).
	Alive func(pid int) bool
}

// holderID is the ticket-id prefix of h: role hash, host, pid and
// instance, separated by '|' (host names have none).
type holderID struct {
	role, host string
	pid        int
	instance   string
}

func newHolderID(h Holder, instance string) holderID {
	id := holderID{host: h.Host, pid: h.PID, instance: instance}
	if h.Role != "" {
		sum := sha256.Sum256([]byte(h.Role))
		id.role = hex.EncodeToString(sum[:8])
	}
	if id.host == "" {
		id.host, _ = os.Hostname()
	}
	id.host = strings.ReplaceAll(id.host, "|", "_")
	if id.pid == 0 {
		id.pid = os.Getpid()
	}
	return id
}

func (h holderID) String() string {
	return h.role + "|" + h.host + "|" + strconv.Itoa(h.pid) + "|" + h.instance
}

// parseTicket reads the holder of a ticket id written by holderID.String
// followed by ":seq".
func parseTicket(member string) (holderID, bool) {
	parts := strings.Split(member, "|")
	if len(parts) != 4 {
		return holderID{}, false
	}
	pid, err := strconv.Atoi(parts[2])
	if err != nil {
		return holderID{}, false
	}
	inst, _, _ := strings.Cut(parts[3], ":")
	return holderID{role: parts[0], host: parts[1], pid: pid, instance: inst}, true
}

// deadPredecessor reports whether a ticket of holder t was left by a dead
// process in this Budget's role.
func (b *Budget) deadPredecessor(t holderID) bool {
	me := b.holder
	if me.role == "" || t.role != me.role || t.host != me.host || t.instance == me.instance {
		return false
	}
	return t.pid == me.pid || !b.alive(t.pid)
}

// reclaim frees the concurrency slots and room places of key k left by
// dead predecessors (see Holder). It runs once per key, before this
// process's first ticket on it, and returns how many slots it freed.
func (b *Budget) reclaim(ctx context.Context, k *keyState) (int, error) {
	if b.holder.role == "" {
		return 0, nil
	}
	dead := func(key string) ([]any, error) {
		members, err := b.client.ZRange(ctx, key, 0, -1).Result()
		if err != nil {
			return nil, fmt.Errorf("redisbudget: reclaim slots of %q: %w", k.name, err)
		}
		var out []any
		for _, m := range members {
			if t, ok := parseTicket(m); ok && b.deadPredecessor(t) {
				out = append(out, m)
			}
		}
		return out, nil
	}
	// A dead process renews nothing, so removing its exact ids cannot take
	// a slot or place anyone else holds.
	if places, err := dead(k.redisKeys[rkRoom]); err != nil {
		return 0, err
	} else if len(places) > 0 {
		if err := leaveScript().Run(ctx, b.client, []string{k.redisKeys[rkRoom], k.redisKeys[rkRoomLease]}, append([]any{k.channel}, places...)...).Err(); err != nil {
			return 0, fmt.Errorf("redisbudget: reclaim slots of %q: %w", k.name, err)
		}
	}
	slots, err := dead(k.redisKeys[rkInflight])
	if err != nil || len(slots) == 0 {
		return 0, err
	}
	n, err := b.client.ZRem(ctx, k.redisKeys[rkInflight], slots...).Result()
	if err != nil {
		return 0, fmt.Errorf("redisbudget: reclaim slots of %q: %w", k.name, err)
	}
	return int(n), nil
}
