/* SPDX-License-Identifier: GPL-2.0 */
/* dlscope's version: said by --version and written into every trace's header. */
#ifndef DLSCOPE_VERSION_H
#define DLSCOPE_VERSION_H

#define DLSCOPE_VERSION "0.1.0"

#endif
