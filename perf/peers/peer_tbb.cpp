// SPDX-License-Identifier: MIT
//
// spawn peer: oneTBB. A task_arena of N slots (the calling thread takes
// one) runs N drivers from one task_group; each driver spawns a batch of
// 64 empty tasks into its own task_group, waits for them (the waiting
// thread runs tasks meanwhile) and repeats until the deadline. As in the
// OpenMP peer the driver is a loop, not a task, and only the leaf tasks
// are counted. A scheduler observer pins the thread in arena slot i to
// percore's worker i's CPU when CPUs are given.
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#include <tbb/task_scheduler_observer.h>

#include "peers.h"

namespace
{

peer_count count[PEER_MAX_THREADS];

class pin_observer : public tbb::task_scheduler_observer
{
      public:
        pin_observer(tbb::task_arena &a, const int *cpus, unsigned n)
            : tbb::task_scheduler_observer(a), cpus_(cpus), n_(n)
        {
                observe(true);
        }
        ~pin_observer()
        {
                observe(false);
        }

        void on_scheduler_entry(bool) override
        {
                int slot = tbb::this_task_arena::current_thread_index();

                if (slot >= 0 && unsigned(slot) < n_ && peer_pin_self(cpus_[slot]) != 0)
                        err.store(true);
        }

        std::atomic<bool> err{false};

      private:
        const int *cpus_;
        unsigned n_;
};

void leaf()
{
        count[tbb::this_task_arena::current_thread_index()].ran++;
}

void driver(double deadline)
{
        while (peer_now_s() < deadline) {
                tbb::task_group batch;
                for (int i = 0; i < PEER_BATCH; i++)
                        batch.run(leaf);
                batch.wait();
        }
}

} // namespace

extern "C" double peer_tbb_spawn(unsigned workers, const int *cpus, double seconds)
{
        unsigned long long total = 0;
        double t0 = 0, t1 = 0;
        cpu_set_t saved;
        int rc;

        if (workers == 0 || workers > PEER_MAX_THREADS)
                return -EINVAL;
        rc = peer_affinity_save(&saved);
        if (rc)
                return rc;
        std::memset(static_cast<void *>(count), 0, sizeof(count));
        try {
                // TBB's pool is sized to the CPUs by default; with PERCORE_PIN=0
                // percore may run more workers than that, so allow as many.
                tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                                          workers);
                tbb::task_arena arena{int(workers)};
                arena.initialize();
                pin_observer pin(arena, cpus, cpus ? workers : 0);

                arena.execute([&] {
                        tbb::task_group drivers;
                        t0 = peer_now_s();
                        double deadline = t0 + seconds;
                        for (unsigned i = 0; i < workers; i++)
                                drivers.run([deadline] { driver(deadline); });
                        drivers.wait();
                        t1 = peer_now_s();
                });
                if (pin.err.load())
                        rc = -EINVAL;
        } catch (const std::bad_alloc &) {
                rc = -ENOMEM;
        } catch (...) {
                rc = -EIO;
        }
        if (cpus)
                peer_affinity_restore(&saved);
        if (rc)
                return rc;
        for (unsigned i = 0; i < workers; i++)
                total += count[i].ran;
        return double(total) / workers / (t1 - t0);
}
