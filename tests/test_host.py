"""Host activity recorded with every job: other processes' CPU is seen, the driver's own is not."""

import os
import subprocess
import sys
import time

from fhemark.measure.host import Activity


def spin(seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", f"import time\nt = time.time() + {seconds}\nwhile time.time() < t: pass"])


def test_other_process_is_counted_and_the_driver_is_not():
    other = spin(1.0)
    seen = Activity(None)
    other.wait()
    busy = seen.finish()
    assert busy is not None and busy["other_cores"] > 0.3 and busy["window_s"] >= 0.9
    driver = spin(1.0)
    own = Activity(driver.pid)  # the same load, now as the job's own driver
    time.sleep(1.2)  # read it before reaping, as the runner reads a live driver
    quiet = own.finish()
    driver.wait()
    assert quiet["other_cores"] < busy["other_cores"]
    assert set(busy) == {"window_s", "other_cores", "steal_share", "load_1m", "contended"}


def test_a_job_too_short_for_tick_counters_is_not_judged():
    """One 10 ms tick stolen during a 13 ms job would read as 5% steal: such jobs are not marked."""
    short = Activity(None)
    time.sleep(0.05)
    reading = short.finish()
    assert reading is None or reading["contended"] is None
    long = Activity(None)
    time.sleep(0.6)
    assert long.finish()["contended"] in (True, False)


def test_a_jobs_own_other_process_is_not_contention():
    """Throughput mode's other drivers are the job's own: told to the activity before they stop,
    their CPU is not read as another process's. Two readings of the same window, one told and one
    not, so whatever else the host runs meanwhile is in both."""
    driver, helper = spin(1.0), spin(1.0)
    told, untold = Activity(driver.pid), Activity(driver.pid)
    time.sleep(1.1)
    told.own_process(helper.pid)
    usage = os.wait4(helper.pid, 0)[2]  # the CPU the helper really got: on a loaded host, less than a core
    helper.returncode = 0
    a, b = told.finish(), untold.finish()
    driver.wait()
    helper_cores = (usage.ru_utime + usage.ru_stime) / b["window_s"]
    assert helper_cores > 0.1, usage
    # the helper's cores, and only in the reading not told of it
    assert b["other_cores"] - a["other_cores"] > 0.5 * helper_cores, (a, b, helper_cores)


def test_a_job_of_short_slices_is_judged_over_its_whole_sampling_time():
    """Six 0.2 s slices, each too short to judge alone, with another process keeping a core busy
    throughout: together 1.2 s, judged, and contended."""
    from fhemark.measure.host import merged
    busy = {"window_s": 0.2, "other_cores": 0.9, "steal_share": 0.0, "load_1m": 1.0, "contended": None}
    quiet = {**busy, "other_cores": 0.05}
    assert merged([busy] * 6)["contended"] is True
    assert merged([quiet] * 6)["contended"] is False
    assert merged([busy, None])["contended"] is None  # 0.2 s in all: still too short to say
