/* systemd's readiness protocol (sd_notify(3)) without libsystemd: a
 * datagram "READY=1" (or "STATUS=...", "STOPPING=1") to the socket
 * $NOTIFY_SOCKET names, when the service manager set it (Type=notify).
 * Nothing happens without it, so every process may call it. */
#ifndef CS_SDNOTIFY_H
#define CS_SDNOTIFY_H

/* 1 sent, 0 no $NOTIFY_SOCKET, -1 the socket refused it (errno set). */
int sdn_notify(const char *state);

#endif
