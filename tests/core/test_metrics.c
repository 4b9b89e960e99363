/* SPDX-License-Identifier: MIT */
/*
 * PERCORE_METRICS, the parts a scrape does not show: the request router,
 * the ADDR:PORT parser, the text format's escaping, and start-up failing,
 * naming the variable, for a bad value or a port already taken. The
 * scrapes themselves are tests/core/test_metrics_scrape.py's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pc_test.h"
#include "pc_core_pvt.h"

struct route {
        const char *req;
        int status;
};

static void test_route(void **state)
{
        static const struct route cases[] = {
                {"", 0},
                {"GET /metrics HTTP/1.1\r\n", 0},
                {"GET /metrics HTTP/1.1\r\nHost: x\r\n", 0},
                {"GET /metrics HTTP/1.1\r\n\r\n", 200},
                {"GET /metrics HTTP/1.0\n\n", 200},
                {"GET /metrics?name[]=x HTTP/1.1\r\nHost: a:1\r\nAccept: */*\r\n\r\n",
                 200},
                {"GET /metrics HTTP/1.1\r\nUser-Agent: a\tb\r\n\r\n", 200},
                {"GET /metricsx HTTP/1.1\r\n\r\n", 404},
                {"GET / HTTP/1.1\r\n\r\n", 404},
                {"GET /metrics/ HTTP/1.1\r\n\r\n", 404},
                {"POST /metrics HTTP/1.1\r\n\r\n", 405},
                {"HEAD /metrics HTTP/1.1\r\n\r\n", 405},
                {"GET /metrics HTTP/2.0\r\n\r\n", 505},
                {"GET /metrics HTTP/1.2\r\n\r\n", 505},
                {"GET /metrics\r\n\r\n", 400},
                {"GET  /metrics HTTP/1.1\r\n\r\n", 400},
                {"GET /metrics HTTP/1.1 \r\n\r\n", 400},
                {"GET /metrics FTP/1.1\r\n\r\n", 400},
                {"G(T /metrics HTTP/1.1\r\n\r\n", 400},
                {"GET metrics HTTP/1.1\r\n\r\n", 400},
                {"GET /met\x01rics HTTP/1.1\r\n\r\n", 400},
                {"GET /metrics HTTP/1.1\r\nno colon\r\n\r\n", 400},
                {"GET /metrics HTTP/1.1\r\n: empty name\r\n\r\n", 400},
                {"GET /metrics HTTP/1.1\r\nBad Name: x\r\n\r\n", 400},
                {"GET /metrics HTTP/1.1\r\nX: a\x7f\r\n\r\n", 400},
                {"\r\n\r\n", 400},
        };
        char big[8192];

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int got = pc__http_route(cases[i].req, strlen(cases[i].req));
                if (got != cases[i].status)
                        fail_msg("'%s': %d, expected %d", cases[i].req, got,
                                 cases[i].status);
        }
        /* A head that never ends is refused once it fills the buffer. */
        memset(big, 'a', sizeof(big));
        memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
        assert_int_equal(pc__http_route(big, 4095), 0);
        assert_int_equal(pc__http_route(big, 4096), 431);
        memcpy(big + 5000, "\r\n\r\n", 4);
        assert_int_equal(pc__http_route(big, 5004), 431);
}

static void test_addr(void **state)
{
        static const char *const good[] = {"127.0.0.1:9100", "0.0.0.0:0", "[::1]:65535",
                                           "[::]:80", "10.1.2.3:00080"};
        static const char *const bad[] = {
                "",          "9100",         "127.0.0.1:9x",   "127.0.0.1",
                ":9100",     "127.0.0.1:",   "127.0.0.1:65536", "localhost:9100",
                "::1:9100",  "[::1:9100",    "[]:9100",        "1.2.3.4.5:1",
                "127.0.0.1:-1", "[127.0.0.1]:1", "1.2.3.4:123456",
        };
        struct sockaddr_storage ss;
        unsigned len;

        (void)state;
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                if (pc__metrics_addr(good[i], &ss, &len))
                        fail_msg("'%s' refused", good[i]);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (pc__metrics_addr(bad[i], &ss, &len) != -EINVAL)
                        fail_msg("'%s' accepted", bad[i]);
        assert_int_equal(pc__metrics_addr("[::1]:9100", &ss, &len), 0);
        assert_int_equal(ss.ss_family, AF_INET6);
        assert_int_equal(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 9100);
}

static void test_escaping(void **state)
{
        struct pc__prom p = {0};
        const char *l[] = {"port", "a\\b\"c\nd", "queue", "0"};

        (void)state;
        pc__prom_family(&p, "x_total", "counter",
                        "Help with \\ and\nnewline and \"quotes\".");
        pc__prom_u64(&p, "x_total", l, 2, 18446744073709551615ull);
        pc__prom_f64(&p, "y", NULL, 0, 0.25);
        pc__prom_worker_u64(&p, "z", 7, 3);
        assert_false(p.failed);
        assert_true(p.len < p.cap);
        p.buf[p.len] = '\0';
        assert_string_equal(p.buf,
                            "# HELP x_total Help with \\\\ and\\nnewline and "
                            "\"quotes\".\n"
                            "# TYPE x_total counter\n"
                            "x_total{port=\"a\\\\b\\\"c\\nd\",queue=\"0\"} "
                            "18446744073709551615\n"
                            "y 0.25\n"
                            "z{worker=\"7\"} 3\n");
        free(p.buf);
}

/* pc_runtime_create() with @val in PERCORE_METRICS, its log in @log. */
static int create_with(const char *val, char *log, size_t len, struct pc_runtime **rt)
{
        char path[] = "/tmp/pc-metrics-log-XXXXXX";
        int fd = mkstemp(path), saved = dup(STDERR_FILENO), rc;
        struct pc_config cfg;
        ssize_t n;

        assert_true(fd >= 0 && saved >= 0);
        unlink(path);
        setenv("PERCORE_METRICS", val, 1);
        pc_test_config(&cfg, 1);
        fflush(stderr);
        dup2(fd, STDERR_FILENO);
        rc = pc_runtime_create(&cfg, rt);
        dup2(saved, STDERR_FILENO);
        close(saved);
        unsetenv("PERCORE_METRICS");
        n = pread(fd, log, len - 1, 0);
        log[n > 0 ? n : 0] = '\0';
        close(fd);
        return rc;
}

static void test_start_fails_naming_the_variable(void **state)
{
        struct pc_runtime *rt = NULL, *rt2 = NULL;
        char log[2048], addr[64];
        int port;

        (void)state;
        assert_int_equal(create_with("127.0.0.1", log, sizeof(log), &rt), -EINVAL);
        assert_null(rt);
        assert_non_null(strstr(log, "PERCORE_METRICS='127.0.0.1' is not valid"));
        assert_int_equal(create_with("", log, sizeof(log), &rt), -EINVAL);
        assert_non_null(strstr(log, "PERCORE_METRICS"));

        assert_int_equal(create_with("127.0.0.1:0", log, sizeof(log), &rt), 0);
        port = pc_runtime_metrics_port(rt);
        assert_true(port > 0);
        snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
        assert_int_equal(create_with(addr, log, sizeof(log), &rt2), -EADDRINUSE);
        assert_null(rt2);
        if (strstr(log, "PERCORE_METRICS=127.0.0.1:") == NULL ||
            strstr(log, "cannot listen") == NULL)
                fail_msg("log: %s", log);
        pc_runtime_destroy(rt);
        assert_int_equal(pc_runtime_metrics_port(NULL), -EINVAL);
}

static void test_off_by_default(void **state)
{
        struct pc_config cfg;
        struct pc_runtime *rt;

        (void)state;
        pc_test_config(&cfg, 1);
        assert_null(cfg.metrics);
        assert_int_equal(pc_runtime_create(&cfg, &rt), 0);
        assert_int_equal(pc_runtime_metrics_port(rt), -ENOENT);
        pc_runtime_destroy(rt);
        cfg.metrics = "nope";
        assert_int_equal(pc_config_validate(&cfg, NULL, 0), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_route),
                cmocka_unit_test(test_addr),
                cmocka_unit_test(test_escaping),
                cmocka_unit_test(test_start_fails_naming_the_variable),
                cmocka_unit_test(test_off_by_default),
        };
        unsetenv("PERCORE_METRICS");
        return cmocka_run_group_tests(tests, NULL, NULL);
}
