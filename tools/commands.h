/*
 * tools/commands.h - the subcommands of zkr, one file each (cmd_*.c).
 * Each takes the program name for its messages ("zkr lock", or
 * "zkr-lock" when run by that name) and argv from the subcommand's name
 * on, and returns the exit status.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKR_COMMANDS_H
#define ZKR_COMMANDS_H

int cmd_lock(const char *program, int argc, char **argv);
int cmd_elect(const char *program, int argc, char **argv);
int cmd_ls(const char *program, int argc, char **argv);
int cmd_watch(const char *program, int argc, char **argv);
int cmd_members(const char *program, int argc, char **argv);
int cmd_health(const char *program, int argc, char **argv);
int cmd_revoke(const char *program, int argc, char **argv);
int cmd_counter(const char *program, int argc, char **argv);
int cmd_barrier(const char *program, int argc, char **argv);
int cmd_double_barrier(const char *program, int argc, char **argv);

#endif /* ZKR_COMMANDS_H */
