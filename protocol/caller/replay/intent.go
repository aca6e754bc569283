package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/mu-org/mu-plugins/protocol"
)

// Intent is one effect written down before it was sent.
type Intent struct {
	// ID names the intent's file: derived from the plugin, instance,
	// method and key, so a resend of the same effect keeps its intent.
	ID     string `json:"id"`
	Method string `json:"method"`
	// Key is the effect's key: a host or job key, a delivery's msgId, or
	// the caller's own key for a delivery without one.
	Key string `json:"key"`
	// Agent is a delivery's "<workstream>/<name>".
	Agent string `json:"agent,omitempty"`
	// Params are the exact params sent, with deadline 0: every send writes
	// these bytes with only the deadline's value changed.
	Params json.RawMessage `json:"params"`
	// SHA256 is the hex sha256 of Params.
	SHA256 string `json:"sha256"`

	Plugin   string `json:"plugin"`   // the plugin's name
	Instance string `json:"instance"` // its handshake's instance
	Pgid     int    `json:"pgid"`     // the process group the call went to

	WriterPID int `json:"writerPid"` // mu's process that wrote it
	// Invocation is the invocation (Journal) that wrote it: resolution
	// refuses while it lives.
	Invocation string `json:"invocation,omitempty"`

	// WrittenAt is when the intent was first written (epoch ms): no send
	// of it came earlier.
	WrittenAt int64 `json:"writtenAt"`
	// SentBy is the latest send's deadline (epoch ms): no send of it was
	// written later.
	SentBy int64 `json:"sentBy"`
}

// delivery reports whether method is a delivery.
func delivery(method string) bool {
	switch method {
	case protocol.MethodChannelSend.Name, protocol.MethodChannelFresh.Name, protocol.MethodChannelCommand.Name,
		protocol.MethodChannelInterrupt.Name, protocol.MethodChannelAbort.Name, protocol.MethodChannelAnswer.Name:
		return true
	}
	return false
}

// intentID derives an intent's file name.
func intentID(plugin, instance, method, key string) string {
	sum := sha256.Sum256([]byte(plugin + "\x00" + instance + "\x00" + method + "\x00" + key))
	return method + "-" + hex.EncodeToString(sum[:16])
}

// agentMarker names the file holding the newest delivery to an agent.
func agentMarker(plugin, agent string) string {
	sum := sha256.Sum256([]byte(plugin + "\x00" + agent))
	return hex.EncodeToString(sum[:16])
}

// paramsFields are what the journal reads from an effect's params.
type paramsFields struct {
	Target protocol.Target `json:"target"`
	Key    string          `json:"key"`
	MsgID  string          `json:"msgId"`
}

func readParams(raw json.RawMessage) (paramsFields, error) {
	var f paramsFields
	if err := json.Unmarshal(raw, &f); err != nil {
		return f, fmt.Errorf("params: %w", err)
	}
	return f, nil
}

// effectKey is the params' key (host and job effects) or msgId
// (deliveries).
func effectKey(method string, f paramsFields) string {
	if delivery(method) {
		return f.MsgID
	}
	return f.Key
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
