/* Makes the socket calls the loopback guard must judge, each on a fresh UDP
 * socket, and prints what each returned:
 *     socket_probe CALL ADDRESS PORT [CALL ADDRESS PORT]...
 * CALL is connect, sendto, sendmsg or bind; ADDRESS is IPv4 or IPv6.  A call
 * that fails (no route, no such address) is only reported: the guard's
 * tests point it at addresses outside loopback inside a network namespace
 * of their own, where nothing can leave the machine.  Exit status 2 for bad
 * arguments, else 0. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int parse(const char* text, const char* port, struct sockaddr_storage* out, socklen_t* len) {
    memset(out, 0, sizeof *out);
    struct sockaddr_in* v4 = (struct sockaddr_in*)out;
    struct sockaddr_in6* v6 = (struct sockaddr_in6*)out;
    unsigned short p = (unsigned short)strtoul(port, NULL, 10);
    if (inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(p);
        *len = sizeof *v4;
        return 0;
    }
    if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(p);
        *len = sizeof *v6;
        return 0;
    }
    return -1;
}

static long call(const char* what, int fd, const struct sockaddr* sa, socklen_t len) {
    static const char byte[1] = {0};
    if (strcmp(what, "connect") == 0) return connect(fd, sa, len);
    if (strcmp(what, "bind") == 0) return bind(fd, sa, len);
    if (strcmp(what, "sendto") == 0) return sendto(fd, byte, sizeof byte, 0, sa, len);
    if (strcmp(what, "sendmsg") == 0) {
        struct iovec iov = {(void*)byte, sizeof byte};
        struct msghdr msg = {0};
        msg.msg_name = (void*)sa;
        msg.msg_namelen = len;
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        return sendmsg(fd, &msg, 0);
    }
    return -2;
}

int main(int argc, char** argv) {
    if (argc < 4 || (argc - 1) % 3 != 0) {
        fprintf(stderr, "usage: socket_probe CALL ADDRESS PORT [CALL ADDRESS PORT]...\n");
        return 2;
    }
    for (int i = 1; i + 2 < argc; i += 3) {
        struct sockaddr_storage sa;
        socklen_t len;
        if (parse(argv[i + 1], argv[i + 2], &sa, &len) != 0) {
            fprintf(stderr, "socket_probe: not an IPv4 or IPv6 address: %s\n", argv[i + 1]);
            return 2;
        }
        int fd = socket(sa.ss_family, SOCK_DGRAM, 0);
        if (fd < 0) {
            printf("%s %s: socket: %s\n", argv[i], argv[i + 1], strerror(errno));
            continue;
        }
        long rc = call(argv[i], fd, (const struct sockaddr*)&sa, len);
        if (rc == -2) {
            fprintf(stderr, "socket_probe: unknown call %s\n", argv[i]);
            close(fd);
            return 2;
        }
        printf("%s %s: %s\n", argv[i], argv[i + 1], rc < 0 ? strerror(errno) : "ok");
        close(fd);
    }
    return 0;
}
