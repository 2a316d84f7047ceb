import { resume10k } from "./resume.js"
const row = await resume10k()
console.log(JSON.stringify({ ratio: row.value, detail: row.detail }).slice(0, 400))
