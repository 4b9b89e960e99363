/* SPDX-License-Identifier: MIT */
/*
 * The ARP table of a port, shared by all its workers: an entry learned
 * from a reply that reached worker 2 serves worker 0's next send. RSS
 * spreads ARP replies like any other frame, so a table per worker would
 * leave most workers unable to answer or reach a peer they never heard.
 *
 * A fixed open-addressed table (PC_ARP_SLOTS, linear probing over a window
 * of PC_ARP_PROBE slots), each slot guarded by a sequence number: readers
 * never write (a lookup is a few loads and a retry if a writer was busy);
 * writers are rare (an ARP frame, never a data packet), claim a slot by
 * turning its sequence odd with a compare-and-swap, and publish by making
 * it even again. Every field is an atomic, so the race between a reader
 * and a writer is well defined (and ThreadSanitizer agrees); the sequence
 * tells the reader whether what it read was one writer's whole entry.
 *
 * Learning is best effort: a writer that finds its slot claimed by another
 * gives up; the next ARP frame from that peer teaches it again. A full
 * window evicts the slot the address hashes to. Entries do not age: a
 * peer that changes its MAC announces it (gratuitous ARP) and the entry is
 * updated in place.
 */
#include <string.h>

#include "dpdk_pvt.h"

static inline unsigned arp_hash(uint32_t addr)
{
        return (addr * 2654435761u) >> 16 & (PC_ARP_SLOTS - 1);
}

static inline uint64_t mac_pack(const uint8_t *mac)
{
        uint64_t v = 0;

        for (int i = 0; i < 6; i++)
                v = v << 8 | mac[i];
        return v | (uint64_t)1 << 63; /* valid */
}

static inline void mac_unpack(uint64_t v, uint8_t *mac)
{
        for (int i = 5; i >= 0; i--) {
                mac[i] = (uint8_t)v;
                v >>= 8;
        }
}

/* Read slot @s whole: false when a writer held it through our retries. */
static bool slot_read(const struct pc_arp_slot *s, uint32_t *addr, uint64_t *mac)
{
        for (int tries = 0; tries < 4; tries++) {
                uint32_t q1 = atomic_load_explicit(&s->seq, memory_order_acquire);

                if (q1 & 1)
                        continue;
                *addr = atomic_load_explicit(&s->addr, memory_order_relaxed);
                *mac = atomic_load_explicit(&s->mac, memory_order_relaxed);
                atomic_thread_fence(memory_order_acquire);
                if (atomic_load_explicit(&s->seq, memory_order_relaxed) == q1)
                        return true;
        }
        return false;
}

bool pc__arp_lookup(const struct pc_port *p, uint32_t addr, uint8_t *mac)
{
        unsigned h = arp_hash(addr);

        if (addr == 0)
                return false;
        for (unsigned i = 0; i < PC_ARP_PROBE; i++) {
                const struct pc_arp_slot *s = &p->arp[(h + i) & (PC_ARP_SLOTS - 1)];
                uint32_t a;
                uint64_t m;

                if (!slot_read(s, &a, &m))
                        continue;
                if (a == addr) {
                        mac_unpack(m, mac);
                        return true;
                }
                if (a == 0)
                        return false; /* entries are never removed: the probe ends */
        }
        return false;
}

/* Write @addr -> @mac into slot @s if no writer holds it. */
static void slot_write(struct pc_arp_slot *s, uint32_t want_old, uint32_t addr, uint64_t mac)
{
        uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);

        if ((q & 1) ||
            !atomic_compare_exchange_strong_explicit(&s->seq, &q, q + 1, memory_order_acquire,
                                                     memory_order_relaxed))
                return;
        /* Another writer may have filled the slot between our scan and the
         * claim: then leave it (the next frame retries). */
        if (atomic_load_explicit(&s->addr, memory_order_relaxed) == want_old) {
                atomic_store_explicit(&s->addr, addr, memory_order_relaxed);
                atomic_store_explicit(&s->mac, mac, memory_order_relaxed);
        }
        atomic_store_explicit(&s->seq, q + 2, memory_order_release);
}

void pc__arp_learn(struct pc_port *p, uint32_t addr, const uint8_t *mac, bool create)
{
        unsigned h = arp_hash(addr);
        uint64_t packed = mac_pack(mac);
        struct pc_arp_slot *empty = NULL;

        if (addr == 0 || addr == 0xffffffffu)
                return;
        for (unsigned i = 0; i < PC_ARP_PROBE; i++) {
                struct pc_arp_slot *s = &p->arp[(h + i) & (PC_ARP_SLOTS - 1)];
                uint32_t a;
                uint64_t m;

                if (!slot_read(s, &a, &m))
                        return; /* busy: best effort */
                if (a == addr) {
                        if (m != packed) /* unchanged entries cost no write */
                                slot_write(s, addr, addr, packed);
                        return;
                }
                if (a == 0) {
                        empty = s;
                        break;
                }
        }
        if (!create)
                return;
        if (empty) {
                slot_write(empty, 0, addr, packed);
        } else {
                /* A full window: evict the home slot. */
                struct pc_arp_slot *s = &p->arp[h];
                slot_write(s, atomic_load_explicit(&s->addr, memory_order_relaxed), addr,
                           packed);
        }
}
