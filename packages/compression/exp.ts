import { compressInputText } from "./src/input-compression.ts";
for (const t of ["Please, basically, fix the bug in parser.py.", "Please, fix it.", "Kindly, review this.", "Okay, please, basically fix it.", "Fix it, please, now.", "Hi. Please, explain the error."]) console.log(JSON.stringify(t), "->", JSON.stringify(compressInputText(t)));
