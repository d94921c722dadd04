/* The cascade binary's commands: one file each in cmd/ (cmd_NAME.c), listed
 * once in main.c's table. The libraries below hold no command. */
#ifndef CS_CMD_CLI_H
#define CS_CMD_CLI_H

typedef struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
} cli_command;


int cmd_replay(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_correlate(int argc, char **argv);
int cmd_ingest(int argc, char **argv);
/* cmd_collect.c: cascade ingest slurm, cascade ingest journal */
int cmd_ingest_slurm(int argc, char **argv);
int cmd_ingest_journal(int argc, char **argv);
/* cmd_k8s.c: cascade ingest k8s */
int cmd_ingest_k8s(int argc, char **argv);
/* cmd_rw.c: cascade ingest remote-write */
int cmd_ingest_remote_write(int argc, char **argv);
int cmd_dev(int argc, char **argv);
int cmd_broker(int argc, char **argv);
int cmd_kafka(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_rules(int argc, char **argv);
int cmd_act(int argc, char **argv);
int cmd_approve(int argc, char **argv);
int cmd_shadow(int argc, char **argv);
int cmd_incidents(int argc, char **argv);
int cmd_actions(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_console(int argc, char **argv);
int cmd_report(int argc, char **argv);

#include "core/config.h"
#include "core/err.h"
#include "core/kafka_scan.h"
#include "core/rtarget.h"

struct pb_catalog;

/* How long a command waits at start for the brokers to describe its
 * topics (core/kafka.h kfk_producer_topics). */
#define CLI_TOPICS_MS 10000

/* The process configuration: the embedded defaults, then the file (path,
 * else $CASCADE_CONFIG; neither: the defaults alone), its log level, its
 * kafka.properties checked against librdkafka (FILE:LINE:COL), and its
 * kafka.topic_prefix set for the process's topic and group names. -1
 * with the reason printed as "cascade WHO: ...". *used: the file read
 * (NULL: none). */
int cli_config(cs_config *c, const char *path, const char *who,
               const char **used);
/* The rule set of dir ("" = the built-in one), or NULL with every problem
 * logged as FILE:LINE:COL and counted in err. */
struct pb_catalog *cli_load_rules(const char *dir, const char *who,
                                  cs_err *err);
/* The address --redis ADDR gives t (its credentials and the rest stay):
 * 0, or -1 with the problem printed as "cascade CMD: --redis: ...". */
int cli_redis_flag(const char *cmd, const char *addr, rtarget *t);

/* A topic of c's Kafka read to its end (core/kafka_scan.h): messages
 * from since_ms (0: all) to fn(arg, m), within timeout_ms; -1 with the
 * reason printed as "cascade WHO: ...". For the commands that read the
 * durable record (incidents, report). */
int cli_scan(const cs_config *c, const char *who, const char *topic,
             int64_t since_ms, int timeout_ms,
             int (*fn)(void *arg, const rd_kafka_message_t *m), void *arg);

struct event_base;
struct event;
/* systemd readiness (Type=notify, libsystemd's sd_notify): READY=1 once
 * ready(arg) says so (checked every half second; NULL: at once), with
 * STATUS= lines saying what it waits for until then. The timer to free
 * with cli_notify_free at exit (NULL when nothing is pending). */
struct event *cli_notify_ready(struct event_base *base,
                               int (*ready)(char *why, size_t len, void *arg),
                               void *arg);
void cli_notify_free(struct event *ev);

#endif
