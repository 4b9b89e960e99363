/* SPDX-License-Identifier: MIT */
/*
 * percore-bench's writers: the table on stdout (bench_table.c) and the
 * JSON file (bench_json.c), both from the records and notes a run made.
 */
#ifndef PC_BENCH_REPORT_H
#define PC_BENCH_REPORT_H

#include "bench_ratio.h"

/* A suite's facts about where it ran (bench_info()): a JSON object's text
 * and a text for under the table (NULL: none). */
struct bench_note {
        const char *suite;
        char *json, *text;
};

/* The share of the machine's CPU time its hypervisor gave to others while
 * a suite ran (steal, in /proc/stat). */
struct bench_steal {
        const char *suite;
        double share; /* 0-1; negative when /proc/stat could not be read */
};

/* What a run of the bench made, for its writers. */
struct bench_results {
        const struct bench_record *recs;
        unsigned n;
        const struct bench_note *notes;
        unsigned nnotes;
        const struct bench_steal *steals;
        unsigned nsteals;
        unsigned runs;      /* measured rounds per case */
        double duration;    /* seconds a measured run */
        const char *config; /* the effective configuration, one line */
};

/*
 * Print @res as a table on stdout: per suite/case a heading, then one line
 * per percore side and peer of each row with the ratio, the legend, the
 * suites' notes and the host's steal. Main thread only.
 */
void bench_table_print(const struct bench_results *res);

/*
 * Write @res as JSON to @path: the configuration and machine, one record
 * per measurement, one per ratio, and the suites' notes under "info".
 * Returns 0 or a negative errno (after saying why on stderr when the file
 * cannot be opened). Main thread only.
 */
int bench_json_write(const char *path, const struct bench_results *res);

#endif
