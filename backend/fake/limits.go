package fake

import (
	"fmt"
	"strconv"

	"github.com/mu-org/mu-plugins/internal/outcap"
	"github.com/mu-org/mu-plugins/protocol"
)

// Bounds on what the world keeps per agent. The world is read (and, with
// --state, parsed from disk) on every call, so nothing a caller sends may
// make it grow without bound; and every text the channel answers must fit
// one reply once encoding/json has escaped it (a `<` is six bytes there).
const (
	// maxSettleText bounds a settled turn's lastText, escaped: as
	// mu-plugin-docker's tmux channel (tmuxjob.Options.MaxSettleText).
	maxSettleText = 256 << 10
	// maxErrorText bounds a turn's lastError, escaped.
	maxErrorText = 4 << 10
	// maxTurns settled turns of the incarnation are kept for lastRun and
	// watch; their texts together take at most maxTurnsText, escaped (an
	// older turn's text is dropped first, and it reads lastTextTruncated).
	maxTurns     = 1000
	maxTurnsText = 1 << 20
	// maxEvents transcript lines, each at most maxEventText, escaped.
	maxEvents    = 500
	maxEventText = 2 << 10
	// maxQueue deliveries may wait behind the turn in progress.
	maxQueue = 32
	// maxDeliveries msgIds are remembered per agent (for dedupe and
	// receipts); an older one is forgotten once it is past the dedupe
	// window.
	maxDeliveries = 1000
	// maxFences msgIds a receipt answered not-accepted for are fenced per
	// agent; past it a receipt of an unknown msgId is unreachable (a fence
	// is never dropped: its not-accepted was final).
	maxFences = 1000
	// maxMsgID bounds a msgId's length.
	maxMsgID = 1024
)

// fitText cuts s to at most max bytes once escaped, at a rune boundary.
func fitText(s string, max int) (string, bool) {
	b := outcap.CutEscaped([]byte(s), max)
	if len(b) == len(s) {
		return s, false
	}
	return string(b), true
}

// cutMsg cuts a message's text so that the turn it makes settles with a
// lastText that fits (replyTo adds its prefix).
func cutMsg(text string, cut bool) (string, bool) {
	t, c := fitText(text, maxSettleText-len(replyTo("")))
	return t, cut || c
}

// clipEvent is a transcript line's text, cut with a note of the whole size.
func clipEvent(s string) string {
	t, cut := fitText(s, maxEventText)
	if !cut {
		return s
	}
	return t + "…(cut: " + strconv.Itoa(len(s)) + " bytes)"
}

// boundTurns keeps the newest maxTurns, and drops the texts of the older
// ones once the kept texts pass maxTurnsText.
func boundTurns(ts []TurnRec) []TurnRec {
	if len(ts) > maxTurns {
		ts = append([]TurnRec(nil), ts[len(ts)-maxTurns:]...)
	}
	total := 0
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].Text == "" {
			continue
		}
		n := outcap.EscapedLen([]byte(ts[i].Text))
		if total+n > maxTurnsText {
			ts[i].Text, ts[i].Cut = "", true
			continue
		}
		total += n
	}
	return ts
}

// checkMsgID refuses a msgId past maxMsgID.
func checkMsgID(method, id string) error {
	if len(id) > maxMsgID {
		return protocol.Errorf(protocol.Permanent, "%s: msgId of %d bytes (the fake takes at most %d)", method, len(id), maxMsgID)
	}
	return nil
}

// roomInQueue refuses a delivery that would queue past maxQueue.
func roomInQueue(a *Agent, method string) error {
	if a.Turn != nil && len(a.Queue) >= maxQueue {
		return protocol.Errorf(protocol.Retryable, "%s: %d deliveries already wait behind the agent's turn (the fake queues at most %d)", method, len(a.Queue), maxQueue)
	}
	return nil
}

// forgetDeliveries drops the oldest remembered deliveries past
// maxDeliveries, each only once it is past the dedupe window (so a resend
// inside the window still finds its first reply).
func forgetDeliveries(a *Agent, now int64) {
	for len(a.Deliveries) > maxDeliveries {
		oldest, at := "", int64(0)
		for id, d := range a.Deliveries {
			if d.Receipt.At == nil {
				continue
			}
			if oldest == "" || *d.Receipt.At < at {
				oldest, at = id, *d.Receipt.At
			}
		}
		if oldest == "" || now-at < DedupeWindowMs {
			return
		}
		delete(a.Deliveries, oldest)
		a.Forgot++
	}
}

// forgottenReceipt is the receipt of a msgId the agent does not remember,
// once it has forgotten some: it may be one of those.
func forgottenReceipt(a *Agent, id string) protocol.Receipt {
	return protocol.Receipt{State: protocol.ReceiptUnreachable, ID: id, Reason: fmt.Sprintf(
		"the fake remembers the last %d deliveries to an agent and has forgotten %d older ones: this msgId may be one of them", maxDeliveries, a.Forgot)}
}

// fence records that a receipt answered not-accepted for id at now; false
// when the agent holds maxFences already (nothing is recorded).
func fence(a *Agent, id string, now int64) bool {
	if len(a.NotAccepted) >= maxFences {
		return false
	}
	if a.NotAccepted == nil {
		a.NotAccepted = map[string]int64{}
	}
	a.NotAccepted[id] = max(now, 1)
	return true
}

// fencesFull is the receipt of an unknown msgId once the agent holds
// maxFences: it cannot answer a final not-accepted.
func fencesFull(id string) protocol.Receipt {
	return protocol.Receipt{State: protocol.ReceiptUnreachable, ID: id, Reason: fmt.Sprintf(
		"the fake fences at most %d msgIds per agent whose receipt answered not-accepted, and holds that many: it cannot make another answer final", maxFences)}
}
