# SPDX-License-Identifier: GPL-2.0
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
