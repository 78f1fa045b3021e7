"""The audit's parts that need no compile: the HLO text reader (hlo.py) and
the a + b T fit (fit.py), on texts and numbers whose answers are known."""

import pytest

from gdn_parity_jax import fit, hlo, hlo_walk

# A compiled module in XLA's text form (the shapes of JAX 0.10's output):
# an all-gather at the entry, a collective-permute inside a while body run
# 8 times, an all-reduce with iota replica groups, and the stack tables.
TEXT = """HloModule jit_f, is_scheduled=true, num_partitions=4

FileNames
1 "/x/site-packages/gdn_parity_jax/impls.py"
2 "/x/layer.py"

FunctionNames
1 "prefix_associative"
2 "layer"

FileLocations
1 {file_name_id=1 function_name_id=1 line=174 end_line=174 column=8 end_column=8}
2 {file_name_id=2 function_name_id=2 line=31 end_line=31 column=4 end_column=4}

StackFrames
1 {file_location_id=2 parent_frame_id=1}
2 {file_location_id=1 parent_frame_id=2}

%body.1 (p: (s32[], f32[1,2,16,16])) -> (s32[], f32[1,2,16,16]) {
  %p = (s32[], f32[1,2,16,16]{3,2,1,0}) parameter(0)
  %gte = f32[1,2,16,16]{3,2,1,0} get-tuple-element(%p), index=1
  %collective-permute.3 = f32[1,2,16,16]{3,2,1,0} collective-permute(%gte), channel_id=2, source_target_pairs={{0,1},{1,2},{2,3}}, metadata={op_name="jit(f)/shard_map/ppermute" stack_frame_id=2}
  ROOT %t = (s32[], f32[1,2,16,16]{3,2,1,0}) tuple(%i, %collective-permute.3)
}

%cond.1 (p: (s32[], f32[1,2,16,16])) -> pred[] {
  ROOT %c = pred[] constant(true)
}

ENTRY %main.9 (a: f32[1,64,2,16]) -> f32[4,1,64,2,16] {
  %a = f32[1,64,2,16]{3,2,1,0} parameter(0)
  %all-gather.15 = f32[4,1,64,2,16]{4,3,2,1,0} all-gather(%a), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true, metadata={op_name="jit(f)/shard_map/all_gather" stack_frame_id=2}
  %w = (s32[], f32[1,2,16,16]{3,2,1,0}) while(%t0), condition=%cond.1, body=%body.1, backend_config={"known_trip_count":{"n":"8"}}
  %all-reduce.2 = bf16[2,16]{1,0} all-reduce(%x), channel_id=3, replica_groups=[2,2]<=[4], to_apply=%add
  ROOT %r = f32[4,1,64,2,16]{4,3,2,1,0} copy(%all-gather.15)
}
"""


def test_collectives_read_from_module_text():
    cs = {c["name"]: c for c in hlo_walk.collectives(TEXT)}
    assert sorted(cs) == ["all-gather.15", "all-reduce.2", "collective-permute.3"]
    ag = cs["all-gather.15"]
    assert (ag["kind"], ag["dtype"], ag["shape"]) == ("all-gather", "f32", [4, 1, 64, 2, 16])
    assert ag["bytes"] == 4 * 64 * 2 * 16 * 4 and ag["executions"] == 1
    assert ag["replica_groups"] == [[0, 1, 2, 3]] and ag["source_target_pairs"] is None
    assert ag["op_name"] == "jit(f)/shard_map/all_gather"
    # innermost frame first; the parent id is printed one above the parent's
    assert ag["source"] == "gdn_parity_jax/impls.py:174 (prefix_associative)"
    assert ag["stack"] == [ag["source"], "x/layer.py:31 (layer)"]
    assert ag["computation"] == "ENTRY"
    cp = cs["collective-permute.3"]
    assert cp["source_target_pairs"] == [[0, 1], [1, 2], [2, 3]]
    assert cp["executions"] == 8 and cp["bytes"] == 2 * 16 * 16 * 4
    assert cp["bytes_total"] == 8 * cp["bytes"] and cp["computation"] == "body.1"
    ar = cs["all-reduce.2"]
    assert (ar["dtype"], ar["bytes"]) == ("bf16", 2 * 16 * 2)
    assert ar["replica_groups"] == [[0, 1], [2, 3]]
    assert ar["op_name"] is None and ar["source"] is None and ar["stack"] == []
    assert hlo.describe(ag) == "all-gather f32[4,1,64,2,16]"


def test_no_collective_in_a_module_without_any():
    # negative control: the same text with the collectives' opcodes renamed
    text = TEXT.replace("all-gather(", "copy(").replace("collective-permute(", "copy(") \
        .replace("all-reduce(", "add(")
    assert hlo_walk.collectives(text) == []


def test_linear_fit_exact_constant_and_noisy():
    f = fit.linear([(256, 1000 + 3 * 256), (512, 1000 + 3 * 512), (1024, 1000 + 3 * 1024)])
    assert f["a"] == pytest.approx(1000, abs=1e-9) and f["b"] == pytest.approx(3, abs=1e-12)
    assert f["r2"] == pytest.approx(1.0, abs=1e-12) and f["max_rel_residual"] < 1e-12
    c = fit.linear([(256, 7), (512, 7), (1024, 7)])
    assert (c["b"], c["r2"]) == (0.0, 1.0)
    n = fit.linear([(256, 0), (512, 100), (1024, 0)])  # not a line: r2 well below 1
    assert n["r2"] < 0.2 and n["max_rel_residual"] > 0.3
    with pytest.raises(ValueError):
        fit.linear([(256, 1), (256, 2)])


def test_longest_t():
    assert fit.longest_t(100, 2, 1100, 4) == 500
    assert fit.longest_t(100, 3, 1100, 4) == 332  # 333 rounded down to a multiple of 4
    assert fit.longest_t(2000, 1, 1100, 1) is None  # the intercept alone does not fit
    assert fit.longest_t(100, 0, 1100, 1) == "unbounded"


ASYNC = """HloModule m, num_partitions=2

%wrapped (p: f32[4]) -> f32[8] {
  %p = f32[4]{0} parameter(0)
  ROOT %ag = f32[8]{0} all-gather(%p), replica_groups={{0,1}}, dimensions={0}
}

%b0 (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  ROOT %m = f32[8]{0} multiply(%x, %x)
}

%b1 (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %m = f32[8]{0} multiply(%x, %x)
  %n = f32[8]{0} add(%m, %x)
  ROOT %ag2 = f32[8]{0} all-reduce(%n), replica_groups={{0,1}}, to_apply=%add
}

ENTRY %main (a: f32[4], i: s32[]) -> f32[8] {
  %a = f32[4]{0} parameter(0)
  %i = s32[] parameter(1)
  %s = ((f32[4]), f32[8]) async-start(%a), calls=%wrapped
  %d = f32[8]{0} async-done(%s), calls=%wrapped
  ROOT %c = f32[8]{0} conditional(%i, %d, %d), branch_computations={%b0, %b1}
}
"""


def test_async_wrapper_once_and_the_largest_branch():
    """An async-start runs its computation once (the -done does not again);
    a conditional counts its largest branch's work and collective bytes,
    and lists every branch's collectives."""
    from gdn_parity_jax import hlo_walk
    r = hlo_walk.walk(ASYNC)
    assert sorted((c["name"], c["executions"]) for c in r["collectives"]) == [("ag", 1), ("ag2", 1)]
    assert r["work"]["flops"] == 16  # branch 1: 8 multiplies + 8 adds
    assert r["collective_bytes"] == 32 + 32
    (ag2,) = [c for c in r["collectives"] if c["name"] == "ag2"]
    assert ag2["conditional"] == "c"
