"""algbw/busbw as nccl-tests defines them, sweep sizes, and the all-reduce verdict (pure)."""

from __future__ import annotations

import pytest

from fwdoctor.smoke import allreduce as ar
from fwdoctor.smoke import bandwidth as bw
from fwdoctor.runner import StreamResult


def test_algbw_is_bytes_over_seconds_in_decimal_gigabytes():
    # 1e9 bytes in one second is 1 GB/s (nccl-tests divides by 1.0E9, not 2**30).
    assert bw.algbw_gbps(1_000_000_000, 1.0) == pytest.approx(1.0)
    assert bw.algbw_gbps(256 * 1024**2, 0.01) == pytest.approx(26.8435456)


@pytest.mark.parametrize(
    ("nranks", "factor"),
    [(1, 0.0), (2, 1.0), (4, 1.5), (8, 1.75), (16, 1.875)],
)
def test_busbw_factor_is_two_times_n_minus_one_over_n(nranks, factor):
    assert bw.busbw_factor(nranks) == pytest.approx(factor)


def test_busbw_is_algbw_times_the_allreduce_factor():
    # 8 ranks, 1 GiB in 10 ms: algbw 107.374 GB/s, busbw 1.75x that.
    algbw = bw.algbw_gbps(1024**3, 0.010)
    assert algbw == pytest.approx(107.3741824)
    assert bw.busbw_gbps(1024**3, 0.010, 8) == pytest.approx(algbw * 1.75)


def test_zero_time_gives_zero_bandwidth_instead_of_dividing_by_zero():
    assert bw.busbw_gbps(1024, 0.0, 2) == 0.0


def test_a_rank_count_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        bw.busbw_factor(0)


def test_default_sweep_runs_from_8_bytes_to_256_mib_doubling():
    sizes = bw.sweep_sizes(8, 256 * 1024**2, 2)
    assert sizes[0] == 8 and sizes[-1] == 256 * 1024**2
    assert len(sizes) == 26
    assert all(b == 2 * a for a, b in zip(sizes, sizes[1:]))


def test_sweep_stops_at_the_last_size_not_above_the_maximum():
    assert bw.sweep_sizes(8, 1000, 4) == [8, 32, 128, 512]


@pytest.mark.parametrize(
    ("args", "message"),
    [((0, 8, 2), "at least 1"), ((64, 8, 2), "below --min-bytes"), ((8, 64, 1), "--factor")],
)
def test_bad_sweep_options_are_refused_with_the_option_named(args, message):
    with pytest.raises(ValueError, match=message):
        bw.sweep_sizes(*args)


@pytest.mark.parametrize(("text", "value"), [("8", 8), ("64K", 65536), ("256M", 268435456), ("1G", 1073741824), ("4KiB", 4096)])
def test_sizes_take_binary_suffixes_like_nccl_tests(text, value):
    assert bw.parse_bytes(text) == value


def test_a_malformed_size_names_the_text():
    with pytest.raises(ValueError, match="'12Q'"):
        bw.parse_bytes("12Q")


def test_average_of_nothing_is_zero():
    assert bw.average([]) == 0.0


# --------------------------------------------------------------------------- verdicts
def _data(rows, world=2):
    return {"ok": True, "world_size": world, "rows": rows, "torch": "2.14.1+cu130", "nccl_version": "2.30.7", "nccl_env": {}}


def _ok_launch():
    return StreamResult(("python",), 0, "", "")


def test_rows_get_algbw_and_busbw_from_bytes_time_and_world_size():
    rows = ar.rows_with_bandwidth([{"bytes": 1_000_000, "count": 250_000, "time_s": 0.001, "wrong": 0}], world=4)
    assert rows[0]["algbw_gbps"] == pytest.approx(1.0)
    assert rows[0]["busbw_gbps"] == pytest.approx(1.5)
    assert rows[0]["time_us"] == pytest.approx(1000.0)


def test_average_busbw_below_the_gate_fails_with_both_numbers():
    opts = ar.AllreduceOptions(backend="gloo", min_busbw=2.0)
    p = ar.Plan("gloo", 2)
    rows = [{"bytes": 1_000_000, "count": 250_000, "time_s": 0.001, "wrong": 0}]  # busbw 1.0 with 2 ranks
    result = ar.interpret(opts, p, _ok_launch(), _data(rows))
    assert result.status == "fail"
    assert "average busbw 1 GB/s is below --min-busbw 2" in result.message


def test_any_wrong_element_fails_even_when_fast_enough():
    opts = ar.AllreduceOptions(backend="gloo", min_busbw=0.5)
    rows = [{"bytes": 8, "count": 2, "time_s": 1e-9, "wrong": 0}, {"bytes": 16, "count": 4, "time_s": 1e-9, "wrong": 3}]
    result = ar.interpret(opts, ar.Plan("gloo", 2), _ok_launch(), _data(rows))
    assert result.status == "fail"
    assert result.details["wrong_total"] == 3
    assert "3 wrong elements (sizes 16 B)" in result.message


def test_a_run_that_left_no_result_reports_the_workers_error_line():
    launched = StreamResult(("python",), 1, "", "some torchrun noise\nfwdoctor-error: rank 1: RuntimeError: Connection reset by peer")
    result = ar.interpret(ar.AllreduceOptions(backend="gloo"), ar.Plan("gloo", 2), launched, None)
    assert result.status == "fail"
    assert result.error == "fwdoctor-error: rank 1: RuntimeError: Connection reset by peer"


def test_a_hang_is_reported_with_nccl_things_to_try():
    launched = StreamResult(("python",), None, "", "", timed_out=True, killed=(10, 11, 12))
    result = ar.interpret(ar.AllreduceOptions(backend="nccl", timeout=30), ar.Plan("nccl", 2), launched, None)
    assert result.status == "fail"
    assert "hung and was killed (3 processes)" in result.message
    for knob in ("NCCL_DEBUG=INFO", "NCCL_P2P_DISABLE=1", "/dev/shm", "NCCL_SOCKET_IFNAME"):
        assert knob in result.hint


def test_no_gpu_without_an_explicit_backend_is_a_skip_that_says_how_to_test_cpus():
    p = ar.plan(ar.AllreduceOptions(), count_gpus=lambda python: (0, ""))
    result = ar.run(ar.AllreduceOptions(), planned=p)
    assert result.status == "skipped"
    assert "--backend gloo" in result.message


def test_asking_for_nccl_without_gpus_is_a_failure_not_a_skip():
    p = ar.plan(ar.AllreduceOptions(backend="nccl"), count_gpus=lambda python: (0, ""))
    assert ar.run(ar.AllreduceOptions(backend="nccl"), planned=p).status == "fail"


def test_nccl_plan_runs_one_process_per_visible_gpu():
    p = ar.plan(ar.AllreduceOptions(), count_gpus=lambda python: (8, ""))
    assert (p.backend, p.nproc) == ("nccl", 8)
