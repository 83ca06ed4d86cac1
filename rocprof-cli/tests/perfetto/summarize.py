#!/usr/bin/env python3
"""Decodes a .pftrace with Perfetto's own protobuf classes (the PyPI `perfetto` package) and
prints a JSON summary of what a trace processor would build from it: tracks, slices (nested
per track as the trace processor nests them), flows and counter values, plus every violation
of the format's rules it found (`errors`).

Usage: summarize.py TRACE.pftrace

Exit status 3 (and a message on stderr) when the `perfetto` package is not importable, so
that the caller can report the test as skipped.
"""

import json
import sys

try:
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import (
        Trace,
        TracePacket,
        TrackEvent,
    )
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"perfetto python package not importable: {e}", file=sys.stderr)
    sys.exit(3)

SEQ_CLEARED = TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
SEQ_NEEDS = TracePacket.SEQ_NEEDS_INCREMENTAL_STATE


def annotation_value(a):
    kind = a.WhichOneof("value")
    if kind is None:
        return None
    return getattr(a, kind)


def main(path):
    with open(path, "rb") as f:
        data = f.read()
    trace = Trace()
    trace.ParseFromString(data)

    errors = []
    tracks = {}  # uuid -> descriptor summary
    events = []  # (ts, order, packet summary)
    sequences = {}  # id -> state
    clocks_used = set()

    for order, p in enumerate(trace.packet):
        seq_id = p.trusted_packet_sequence_id
        if seq_id == 0:
            errors.append(f"packet {order}: trusted_packet_sequence_id is 0")
        state = sequences.get(seq_id)
        if state is None:
            if not p.sequence_flags & SEQ_CLEARED:
                errors.append(
                    f"packet {order}: first packet of sequence {seq_id} does not clear the incremental state"
                )
            state = {
                "packets": 0,
                "cleared": False,
                "categories": {},
                "names": {},
                "annotation_names": {},
                "default_clock": None,
                "default_track": None,
                "snapshot": None,
            }
            sequences[seq_id] = state
        state["packets"] += 1
        if p.sequence_flags & SEQ_CLEARED:
            state["cleared"] = True
            state["categories"].clear()
            state["names"].clear()
            state["annotation_names"].clear()
        if p.HasField("trace_packet_defaults"):
            d = p.trace_packet_defaults
            if d.HasField("timestamp_clock_id"):
                state["default_clock"] = d.timestamp_clock_id
            if d.HasField("track_event_defaults"):
                state["default_track"] = d.track_event_defaults.track_uuid
        if p.HasField("interned_data"):
            i = p.interned_data
            for table, entries in (
                ("categories", i.event_categories),
                ("names", i.event_names),
                ("annotation_names", i.debug_annotation_names),
            ):
                for e in entries:
                    if e.iid in state[table] and state[table][e.iid] != e.name:
                        errors.append(f"packet {order}: {table} iid {e.iid} redefined")
                    state[table][e.iid] = e.name
        which = p.WhichOneof("data")
        if which == "clock_snapshot":
            state["snapshot"] = [
                {
                    "clock_id": c.clock_id,
                    "timestamp": c.timestamp,
                    "is_incremental": c.is_incremental,
                }
                for c in p.clock_snapshot.clocks
            ]
        elif which == "track_descriptor":
            t = p.track_descriptor
            if t.uuid in tracks:
                errors.append(f"packet {order}: track {t.uuid} described twice")
            desc = {
                "uuid": t.uuid,
                "parent": t.parent_uuid if t.HasField("parent_uuid") else None,
                "name": t.name if t.HasField("name") else None,
                "sequence": seq_id,
            }
            if t.HasField("process"):
                desc["process"] = {
                    "pid": t.process.pid,
                    "name": t.process.process_name,
                    "cmdline": list(t.process.cmdline),
                }
            if t.HasField("thread"):
                desc["thread"] = {"pid": t.thread.pid, "tid": t.thread.tid}
            if t.HasField("counter"):
                desc["counter"] = {
                    "unit": t.counter.unit,
                    "unit_multiplier": t.counter.unit_multiplier,
                }
            tracks[t.uuid] = desc
        elif which == "track_event":
            e = p.track_event
            if not state["cleared"]:
                errors.append(f"packet {order}: track event before the state was cleared")
            if not p.sequence_flags & SEQ_NEEDS:
                errors.append(f"packet {order}: track event without SEQ_NEEDS_INCREMENTAL_STATE")
            clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else state["default_clock"]
            clocks_used.add(clock)
            if not p.HasField("timestamp"):
                errors.append(f"packet {order}: track event without a timestamp")
            track = e.track_uuid if e.HasField("track_uuid") else state["default_track"]
            kind = TrackEvent.Type.Name(e.type)
            ev = {"ts": p.timestamp, "clock": clock, "track": track, "type": kind}
            if kind == "TYPE_SLICE_BEGIN":
                cats = []
                for iid in e.category_iids:
                    if iid not in state["categories"]:
                        errors.append(f"packet {order}: category iid {iid} not defined")
                    cats.append(state["categories"].get(iid))
                ev["categories"] = cats + list(e.categories)
                if e.HasField("name_iid"):
                    if e.name_iid not in state["names"]:
                        errors.append(f"packet {order}: name iid {e.name_iid} not defined")
                    ev["name"] = state["names"].get(e.name_iid)
                else:
                    ev["name"] = e.name
                args = {}
                for a in e.debug_annotations:
                    if a.HasField("name_iid"):
                        if a.name_iid not in state["annotation_names"]:
                            errors.append(
                                f"packet {order}: annotation name iid {a.name_iid} not defined"
                            )
                        name = state["annotation_names"].get(a.name_iid)
                    else:
                        name = a.name
                    args[name] = annotation_value(a)
                ev["args"] = args
                ev["flow_ids"] = list(e.flow_ids)
            elif kind == "TYPE_SLICE_END":
                if e.category_iids or e.categories:
                    errors.append(f"packet {order}: END event with a category")
            elif kind == "TYPE_COUNTER":
                if e.category_iids or e.categories:
                    errors.append(f"packet {order}: COUNTER event with a category")
                which_value = e.WhichOneof("counter_value_field")
                ev["value"] = getattr(e, which_value) if which_value else None
            events.append((p.timestamp, order, ev))

    for t in tracks.values():
        if t["parent"] is not None and t["parent"] not in tracks:
            errors.append(f"track {t['uuid']}: parent {t['parent']} not described")

    # What the trace processor does: sort by timestamp (stable), then nest per track.
    events.sort(key=lambda x: (x[0], x[1]))
    stacks = {}
    slices = []
    counters = {}
    for ts, order, ev in events:
        track = tracks.get(ev["track"])
        if track is None:
            errors.append(f"packet {order}: event on undescribed track {ev['track']}")
            continue
        if ev["type"] == "TYPE_SLICE_BEGIN":
            stack = stacks.setdefault(ev["track"], [])
            s = {
                "index": len(slices),
                "track": ev["track"],
                "track_name": track["name"],
                "name": ev["name"],
                "category": ",".join(c or "?" for c in ev["categories"]),
                "ts": ts,
                "end": None,
                "depth": len(stack),
                "parent": stack[-1] if stack else None,
                "args": ev["args"],
                "flow_ids": ev["flow_ids"],
            }
            slices.append(s)
            stack.append(s["index"])
        elif ev["type"] == "TYPE_SLICE_END":
            stack = stacks.get(ev["track"], [])
            if not stack:
                errors.append(f"packet {order}: END at {ts} on track {track['name']} with no open slice")
                continue
            slices[stack.pop()]["end"] = ts
        elif ev["type"] == "TYPE_COUNTER":
            if "counter" not in track:
                errors.append(f"packet {order}: counter event on a non-counter track")
            counters.setdefault(track["name"], []).append([ts, ev["value"]])
    for uuid, stack in stacks.items():
        for i in stack:
            errors.append(f"slice {slices[i]['name']} on track {tracks[uuid]['name']} never ends")

    # Flows: each flow id links consecutive slices (in time order) that carry it.
    by_flow = {}
    for s in slices:
        for f in s["flow_ids"]:
            by_flow.setdefault(f, []).append(s["index"])
    flows = []
    for ids in by_flow.values():
        flows.extend([a, b] for a, b in zip(ids, ids[1:]))

    for s in slices:
        s["flow_ids"] = [str(f) for f in s["flow_ids"]]
    summary = {
        "packets": len(trace.packet),
        "errors": errors,
        "sequences": {
            str(k): {
                "packets": v["packets"],
                "default_clock": v["default_clock"],
                "snapshot": v["snapshot"],
            }
            for k, v in sequences.items()
        },
        "clocks_used": sorted(c for c in clocks_used if c is not None),
        "tracks": {str(k): v for k, v in tracks.items()},
        "slices": slices,
        "flows": flows,
        "counters": counters,
    }
    json.dump(summary, sys.stdout, default=str)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
