"""Host activity recorded with every job: other processes' CPU is seen, the driver's own is not."""

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
    their CPU is not read as another process's."""
    driver, helper = spin(1.0), spin(1.0)
    seen = Activity(driver.pid)
    time.sleep(1.1)
    seen.own_process(helper.pid)
    helper.wait()
    quiet = seen.finish()
    driver.wait()
    assert quiet["other_cores"] < 0.3, quiet
